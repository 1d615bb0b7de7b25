"""Every package resource is in the wheel: a user who installs memoryd from a wheel (`pip
install memoryd`, pipx) has only what `[tool.setuptools.package-data]` ships beside the Python
modules, so a data file the code opens (the entity word lists and weights, the web page's files)
that no pattern matches works in a clone and fails in every installation. setuptools reads each
pattern with glob, relative to the package's folder (`*` stays inside one folder), as here.

Also: the build backend's floor reads the project's metadata. `license = "Apache-2.0"` (a
licence expression, PEP 639) needs setuptools 77; an older one refuses the whole build
(`project.license must be valid exactly by one definition`)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memoryd"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# the suffixes of the files the code opens from its own package (not its runtime files: web.json,
# jobs.json, the model's files, which belong to the model's package)
RESOURCE = re.compile(r"^[\w./-]+\.(gz|tsv|txt|md|html|css|js)$")


def _shipped() -> set[str]:
    """Package-relative paths of the non-Python files setuptools puts in the wheel."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert setuptools.get("package-dir") == {"": "."}  # packages are folders of the root
    out: set[str] = set()
    for package, patterns in setuptools.get("package-data", {}).items():
        base = ROOT.joinpath(*package.split("."))
        for pattern in patterns:
            for path in base.glob(pattern):
                if path.is_file():
                    out.add(path.relative_to(PACKAGE).as_posix())
    return out


def _package_files() -> list[str]:
    return sorted(
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
    )


def _foreign() -> set[str]:
    """File names the code reads from folders a person gives, not from the package: a local
    model's files (embedding.model_path, index/identity.py)."""
    from memoryd.index import identity

    return set(identity.MODEL_FILES)


def _named_resources() -> list[tuple[str, str]]:
    """(module, file name) for each string the code names a resource file with."""
    out = []
    foreign = _foreign()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = node.value if isinstance(node, ast.Constant) else None
            if (
                isinstance(value, str)
                and RESOURCE.match(value)
                and not value.startswith(".")
                and value not in foreign
            ):
                out.append((path.relative_to(ROOT).as_posix(), value))
    return out


@pytest.mark.parametrize("name", _package_files())
def test_every_data_file_in_the_package_is_shipped(name: str) -> None:
    assert name in _shipped(), (
        f"memoryd/{name} is not in the wheel: add a pattern for it to "
        "[tool.setuptools.package-data] in pyproject.toml"
    )


@pytest.mark.parametrize(("module", "name"), _named_resources())
def test_every_resource_the_code_names_is_shipped(module: str, name: str) -> None:
    shipped = _shipped()
    places = ("data/", "web/static/", "")
    assert any(f"{place}{name}" in shipped for place in places), (
        f"{module} names {name!r}, which the wheel does not hold (memoryd/data/ or "
        "memoryd/web/static/, matched by [tool.setuptools.package-data])"
    )


def test_the_resources_the_code_names_are_found() -> None:
    """The scan above sees the resources the code opens (a scan that found none would pass)."""
    names = {name for _, name in _named_resources()}
    assert {"entity-typer.tsv.gz", "common-words-en.txt.gz", "shell.html", "common.js"} <= names


def test_the_web_pages_scripts_are_shipped() -> None:
    """Each page's script tags (routes.Shell) name files the wheel holds."""
    from memoryd.web.routes import PAGES, VENDOR

    shipped = _shipped()
    for page in PAGES:
        for name in (*VENDOR.get(page, ()), "common.js", f"{page}.js", "app.css"):
            assert f"web/static/{name}" in shipped, (page, name)


def test_the_scripts_are_shipped() -> None:
    for script in PYPROJECT["tool"]["setuptools"]["script-files"]:
        assert (ROOT / script).is_file(), script


def _version(requirement: str) -> tuple[int, ...]:
    floor = re.search(r">=\s*([\d.]+)", requirement)
    assert floor, f"{requirement}: no lower bound"
    return tuple(int(x) for x in floor.group(1).split("."))


def test_the_build_backend_floor_reads_the_license_expression() -> None:
    requires = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert requires, "the build backend is setuptools"
    if isinstance(PYPROJECT["project"].get("license"), str):  # a PEP 639 expression
        assert _version(requires[0]) >= (77,), (
            f"{requires[0]}: setuptools before 77 refuses license = "
            f"{PYPROJECT['project']['license']!r}"
        )
