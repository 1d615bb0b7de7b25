"""The shape of the house: which package may import which, no import circle anywhere, a
docstring on every package that says what it owns and may import, no module over 600 lines.

Imports are read from the source (ast), so lazy imports inside functions and imports under
TYPE_CHECKING count too: a circle a type checker sees is a circle."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memoryd"

# package -> the memoryd packages it may import (besides itself and memoryd/__init__.py)
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "text": {"core"},
    "store": {"core", "text"},
    "memory": {"core", "text", "store"},
    "index": {"core", "text", "store", "memory"},
    "notes": {"core", "text", "store", "memory", "index"},
    "search": {"core", "text", "store", "memory", "index"},
    "serve": {"core", "text", "store", "memory", "index", "notes", "search"},
    "web": {"core", "text", "store", "memory", "index", "notes", "search", "serve"},
    "agents": {"core", "text", "ctl"},
    "ctl": set(),
}
TOP_EDGES = {"cli", "__main__"}  # the `memoryd` command: may import anything
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> list[tuple[str, int]]:
    """(imported module or package, line) for every import of memoryd in the file, at any
    depth; `from memoryd.x import y` names the module memoryd.x.y when y is one."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "memoryd" or node.module.startswith("memoryd."):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    out.append((sub if sub in MODULES else node.module, node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.append(("<relative>", node.lineno))
        elif isinstance(node, ast.Import):
            out.extend((a.name, node.lineno) for a in node.names if a.name.startswith("memoryd"))
    return out


def package_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_packages_import_only_downward() -> None:
    wrong = []
    for name, path in MODULES.items():
        pkg = package_of(name)
        if pkg in TOP_EDGES or not pkg:
            continue
        assert pkg in ALLOWED, f"{name}: a new package needs its row in ALLOWED (and a docstring)"
        for target, line in imports(path):
            assert target != "<relative>", f"{name}:{line}: use absolute imports"
            other = package_of(target)
            if other in ("", pkg) or (other == "__version__"):
                continue
            if other not in ALLOWED[pkg]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({pkg} -> {other})")
    assert not wrong, "imports against the package order:\n" + "\n".join(wrong)


def test_no_import_circle() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in MODULES.items():
        for target, _ in imports(path):
            if target in MODULES and target != name:
                graph[name].add(target)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in MODULES:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    assert not circles, f"import circles: {circles}"


def test_ctl_imports_only_the_standard_library() -> None:
    """memoryctl starts fast because it imports nothing but the standard library."""
    stdlib = set(sys.stdlib_module_names)
    wrong = []
    for name, path in MODULES.items():
        if package_of(name) != "ctl":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top not in stdlib and not (top == "memoryd" and _is_ctl(node)):
                    wrong.append(f"{name}:{node.lineno} imports {top}")
    assert not wrong, wrong


def _is_ctl(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").startswith("memoryd.ctl")
    return all(a.name.startswith("memoryd.ctl") for a in node.names)


@pytest.mark.parametrize("pkg", sorted(ALLOWED))
def test_every_package_says_what_it_owns(pkg: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / pkg / "__init__.py").read_text()))
    assert doc and "May import" in doc, f"memoryd/{pkg}/__init__.py: docstring with 'May import'"


def test_no_module_over_600_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in MODULES.values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_the_check_sees_a_wrong_import(tmp_path: Path) -> None:
    """The checks above can fail: a lazy upward import inside a function is found."""
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from memoryd.serve.app import App\n    return App\n")
    assert imports(src) == [("memoryd.serve.app", 2)]
