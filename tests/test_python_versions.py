"""The Python versions memoryd says it runs on are the ones it is tested on, said alike in every
place a user or a tool reads them: README's line, pyproject's classifiers (what PyPI and pip
show), `requires-python`'s floor, and the floor the lint and the type check hold the code to
(ruff's `target-version`, mypy's `python_version`: code that only a newer Python parses or types
fails there, not on a user's machine)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLASSIFIER = re.compile(r"^Programming Language :: Python :: (3\.\d+)$")


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def _classified() -> list[str]:
    classifiers = PYPROJECT["project"].get("classifiers", [])
    return sorted((m.group(1) for c in classifiers if (m := CLASSIFIER.match(c))), key=_minor)


def _readme_tested() -> list[str]:
    """The versions README's "Tested on Python ..." line names."""
    found = re.search(r"[Tt]ested on Python ((?:3\.\d+(?:,? and |, ))*3\.\d+)", README)
    assert found, "README names the Python versions tested: 'tested on Python 3.11, 3.12 ...'"
    return sorted(re.findall(r"3\.\d+", found.group(1)), key=_minor)


def test_the_classifiers_name_the_versions_readme_says_are_tested() -> None:
    classified = _classified()
    assert classified, "pyproject.toml: no 'Programming Language :: Python :: 3.x' classifiers"
    assert classified == _readme_tested()
    classifiers = PYPROJECT["project"]["classifiers"]
    assert "Programming Language :: Python :: 3 :: Only" in classifiers


def test_the_tested_versions_run_on_from_the_floor_without_a_gap() -> None:
    floor = re.fullmatch(r">=(3\.\d+)", PYPROJECT["project"]["requires-python"])
    assert floor, "requires-python is a floor alone ('>=3.x'): a cap makes pip pick old releases"
    classified = [_minor(v) for v in _classified()]
    assert classified, "pyproject.toml: no 'Programming Language :: Python :: 3.x' classifiers"
    assert classified[0] == _minor(floor.group(1))
    assert classified == [(3, m) for m in range(classified[0][1], classified[-1][1] + 1)]


def test_the_lint_and_the_type_check_hold_the_code_to_the_floor() -> None:
    floor = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert PYPROJECT["tool"]["mypy"]["python_version"] == floor
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py" + floor.replace(".", "")
