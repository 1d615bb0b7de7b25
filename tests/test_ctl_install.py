"""The installed `memoryctl` (issue 23.6): what pip puts in an environment's bin runs without
`site` and imports the memoryd installed with it, in a venv (`pip install .` and `-e .`),
through a symlink (pipx, `ln -s`), and outside a venv (--prefix, --user: the Python named by
the memoryd command pip wrote beside it, also in pip's long-path form).

pip installs into scratch venvs for real (`python -m venv --without-pip`, then this
environment's pip with `--python`), from wheels the test writes itself with the files a
setuptools build puts in them: building with setuptools would need a download (pyproject asks
for a newer setuptools than an older environment holds). What setuptools does to the script is
checked with its own code: it rewrites only a Python first line, which bin/memoryctl does not
have."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT
from test_ctl import RESULTS, Stub

SCRIPT = ROOT / "bin" / "memoryctl"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without PYTHONPATH (the test's own tree would shadow what is installed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, **extra}


def write_wheel(out: Path, version: str, editable_tree: Path | None = None) -> Path:
    """memoryd's wheel as setuptools builds it (`pip install .`), or with `editable_tree` as its
    editable one (`pip install -e .`: a one-line .pth naming the tree, with package-dir = .).
    memoryd/__init__.py says `version`, so `memoryctl --version` tells which copy ran."""
    name = f"memoryd-{version}"
    info = f"{name}.dist-info"
    files: dict[str, bytes] = {}
    if editable_tree is None:
        for path in sorted((ROOT / "memoryd" / "ctl").glob("*.py")):
            files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
        files["memoryd/__init__.py"] = f'__version__ = "{version}"\n'.encode()
    else:
        files[f"__editable__.{name}.pth"] = f"{editable_tree}\n".encode()
    files[f"{name}.data/scripts/memoryctl"] = SCRIPT.read_bytes()
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: memoryd\nVersion: {version}\n".encode()
    )
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\nmemoryd = memoryd.cli:main\n"
    record = []
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}\n")
    files[f"{info}/RECORD"] = "".join([*record, f"{info}/RECORD,,\n"]).encode()
    wheel = out / f"{name}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for member, data in files.items():
            entry = zipfile.ZipInfo(member)
            entry.external_attr = (0o100755 if "/scripts/" in member else 0o100644) << 16
            z.writestr(entry, data)
    return wheel


def pip_install(python: Path, wheel: Path, *options: str) -> None:
    """This environment's pip, run by `python` (so pip's shebangs name it), no index."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", "--disable-pip-version-check", *options, str(wheel)],
        capture_output=True, text=True, timeout=120, env=clean_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def make_venv(path: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(path)],
        check=True, timeout=60, env=clean_env(),
    )  # fmt: skip
    return path / "bin" / "python"


def run(command: Path | str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it; the modules it imported are on stderr (importtime)."""
    return subprocess.run(
        [str(command), *args], capture_output=True, text=True, timeout=60, cwd=cwd,
        env=clean_env(PYTHONPROFILEIMPORTTIME="1"),
    )  # fmt: skip


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if "| " in line}


def assert_lean_start(done: subprocess.CompletedProcess[str], version: str) -> None:
    """`--version` said the installed copy's version, and Python ran without site."""
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"memoryctl {version}\n"
    assert "site" not in imported(done.stderr), "site ran"


def test_setuptools_leaves_the_first_line_alone() -> None:
    """setuptools' build_scripts rewrites only a Python first line (to `#!python FLAGS`, which
    pip then rewrites to the environment's Python, dropping the flags): `#!/bin/sh` stays. That
    pip leaves it too, the installs below check."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "memoryctl" not in project["project"]["scripts"]  # pip's wrapper imports `re`
    assert project["tool"]["setuptools"]["script-files"] == ["bin/memoryctl"]
    # an editable install adds the root to sys.path (a .pth line), not an import finder
    assert project["tool"]["setuptools"]["package-dir"] == {"": "."}
    first = SCRIPT.read_bytes().split(b"\n", 1)[0]
    assert first == b"#!/bin/sh"
    rewrites = (  # in a process of its own: setuptools replaces distutils as it is imported
        "import sys, setuptools\n"
        "from setuptools._distutils.command.build_scripts import first_line_re\n"
        "print([bool(first_line_re.match(line)) for line in sys.argv[1:]])"
    )
    done = subprocess.run(
        [sys.executable, "-c", rewrites, first.decode(), "#!/usr/bin/env python3 -S -I"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout == "[False, True]\n", done.stderr  # only a Python line is rewritten


def test_pip_install_runs_without_site_also_through_a_link(short_dir: Path) -> None:
    venv = short_dir / "venv"
    pip_install(make_venv(venv), write_wheel(short_dir, "0.1.0+wheel"))
    installed = venv / "bin" / "memoryctl"
    assert installed.read_bytes() == SCRIPT.read_bytes()  # pip's fix_script left it alone
    assert_lean_start(run(installed, "--version", cwd=short_dir), "0.1.0+wheel")
    # pipx and `ln -s`: a link in another folder of the PATH
    (short_dir / "path").mkdir()
    (short_dir / "path" / "memoryctl").symlink_to(installed)
    linked = run(short_dir / "path" / "memoryctl", "--version", cwd=short_dir)
    assert_lean_start(linked, "0.1.0+wheel")
    (short_dir / "path" / "mc").symlink_to(Path("..") / "venv" / "bin" / "memoryctl")
    assert_lean_start(run(Path("path") / "mc", "--version", cwd=short_dir), "0.1.0+wheel")
    # copied out with the memoryd command: the venv of the Python that memoryd names
    (short_dir / "copies").mkdir()
    for name in ("memoryctl", "memoryd"):
        shutil.copy2(venv / "bin" / name, short_dir / "copies" / name)
    copied = run(short_dir / "copies" / "memoryctl", "--version", cwd=short_dir)
    assert_lean_start(copied, "0.1.0+wheel")

    done = run(installed, "--help", cwd=short_dir)
    assert done.returncode == 0 and done.stdout.startswith("usage: memoryctl"), done.stderr
    done = run(installed, "--socket", str(short_dir / "none.sock"), "search", "x", cwd=short_dir)
    assert done.returncode == 3 and "memoryd is not running" in done.stderr
    stub = Stub(short_dir / "d.sock", dict(RESULTS))
    try:
        done = run(installed, "--socket", str(stub.path), "ping", cwd=short_dir)
    finally:
        stub.close()
    assert done.returncode == 0 and done.stdout.startswith("memoryd 0.1.0 is answering on ")
    modules = imported(done.stderr)
    assert "memoryd.ctl" in modules
    # nor os (site imports it; without site it was the largest import: memoryd/ctl/fsenv.py)
    assert not modules & {"site", "os", "re", "pathlib", "importlib.util", "importlib.metadata"}


def test_pip_install_editable_runs_the_tree_without_site(short_dir: Path) -> None:
    tree = short_dir / "tree"
    shutil.copytree(ROOT / "memoryd" / "ctl", tree / "memoryd" / "ctl")
    (tree / "memoryd" / "__init__.py").write_text('__version__ = "0.1.0+tree"\n')
    venv = short_dir / "venv"
    pip_install(make_venv(venv), write_wheel(short_dir, "0.1.0", editable_tree=tree))
    assert_lean_start(run(venv / "bin" / "memoryctl", "--version", cwd=short_dir), "0.1.0+tree")


def test_outside_a_venv_the_python_comes_from_the_memoryd_command(short_dir: Path) -> None:
    """`pip install --prefix` (as --user, or a system Python): no pyvenv.cfg beside bin/, so
    the Python is the one pip named in the memoryd command it wrote beside memoryctl. A path
    over 127 characters makes pip write that command in its `#!/bin/sh` form."""
    deep = short_dir / ("x" * 60) / ("y" * 60)
    python = make_venv(deep / "venv")  # runs pip, so it is the Python pip names
    prefix = short_dir / "prefix"
    pip_install(python, write_wheel(short_dir, "0.1.0+prefix"), "--prefix", str(prefix))
    first = (prefix / "bin" / "memoryd").read_text().split("\n", 2)
    assert first[0] == "#!/bin/sh" and str(python) in first[1], first  # pip's long-path form
    done = run(prefix / "bin" / "memoryctl", "--version", cwd=short_dir)
    assert_lean_start(done, "0.1.0+prefix")

    python = make_venv(short_dir / "v")  # a short path: `#!/abs/python`
    prefix = short_dir / "p2"
    pip_install(python, write_wheel(short_dir, "0.1.0+short"), "--prefix", str(prefix))
    assert (prefix / "bin" / "memoryd").read_text().startswith(f"#!{python}\n")
    assert_lean_start(run(prefix / "bin" / "memoryctl", "--version", cwd=short_dir), "0.1.0+short")


def test_a_package_elsewhere_is_found_by_site(short_dir: Path) -> None:
    """Not where pip puts it for the bin folder (Debian's dist-packages, say): `site` runs
    after all and finds it there, as it would for any Python, not some other copy."""
    python = make_venv(short_dir / "venv")
    pip_install(python, write_wheel(short_dir, "0.1.0+site"))
    lib = short_dir / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (lib / "site-packages" / "elsewhere").mkdir()
    (lib / "site-packages" / "memoryd").rename(lib / "site-packages" / "elsewhere" / "memoryd")
    (lib / "site-packages" / "elsewhere.pth").write_text("elsewhere\n")
    done = run(short_dir / "venv" / "bin" / "memoryctl", "--version", cwd=short_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "memoryctl 0.1.0+site\n" and "site" in imported(done.stderr)


@pytest.mark.parametrize("how", ["sh", "python -S -I", "python"])
def test_the_source_tree_launcher_runs_its_own_package(how: str, short_dir: Path) -> None:
    command = {
        "sh": [str(SCRIPT)],
        "python -S -I": [os.path.realpath(sys.executable), "-S", "-I", str(SCRIPT)],
        "python": [sys.executable, str(SCRIPT)],
    }[how]
    done = subprocess.run(
        [*command, "--socket", str(short_dir / "none.sock"), "search", "x"],
        capture_output=True, text=True, timeout=60, cwd="/", env=clean_env(),
    )  # fmt: skip
    assert done.returncode == 3 and "memoryd is not running" in done.stderr, done.stderr


def test_a_copy_without_its_environment_says_so(short_dir: Path) -> None:
    """Copied alone out of its environment, memoryctl runs the first python3 on the PATH; when
    that one has no memoryd either, it says so, not with a traceback."""
    python = make_venv(short_dir / "venv")  # no memoryd in it
    (short_dir / "bin").mkdir()
    shutil.copy2(SCRIPT, short_dir / "bin" / "memoryctl")
    done = subprocess.run(
        [str(short_dir / "bin" / "memoryctl"), "--version"],
        capture_output=True, text=True, timeout=60, cwd=short_dir,
        env=clean_env(PATH=f"{python.parent}:/usr/bin:/bin"),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"memoryctl: {python.parent / 'python3'} has no memoryd package")
    assert "Traceback" not in done.stderr
