"""Every line `memoryd run` writes off a terminal is one JSON object, whatever happened: a crash
by a fatal signal (faulthandler's dump, logged at the next start), a Ctrl-C while it starts, a
model whose ONNX graph makes onnxruntime's C++ logger write to fd 2. Each test reads the
daemon's stderr line by line with json.loads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, wait_for

from memoryd.core import crashlog

pytestmark = pytest.mark.sqlite_only("what reaches stderr does not depend on the store")


def json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON log line: {line!r}\n{text}") from None
    return out


def test_a_crash_is_one_json_line_at_the_next_start(daemon_factory: Any) -> None:
    d = daemon_factory(logging={"format": "auto", "level": "info"})
    data = Path(d.cfg["data_dir"])
    assert (data / crashlog.FILE_NAME).exists()  # armed, empty, 0600
    assert (data / crashlog.FILE_NAME).stat().st_mode & 0o777 == 0o600
    os.kill(d.proc.pid, signal.SIGSEGV)  # what a C library's bug does
    assert d.proc.wait(30) == -signal.SIGSEGV
    again = daemon_factory(logging={"format": "auto", "level": "info"})
    wait_for(lambda: "previous run crashed" in again.log(), timeout=30)
    assert again.stop() == 0
    lines = json_lines(again.log())
    crashed = [x for x in lines if x["event"] == "the previous run crashed"]
    assert len(crashed) == 1 and crashed[0]["level"] == "error"
    assert "Segmentation fault" in crashed[0]["reason"]
    assert 'File "' in crashed[0]["exception"]  # the Python stacks of its threads
    assert not (data / crashlog.FILE_NAME).exists()  # a clean stop leaves nothing behind


# Loaded by the daemon's Python (PYTHONPATH): Ctrl-C (SIGINT) arrives at one moment of the start,
# before the event loop's handler is in place.
INTERRUPT = """
import os, signal, sys
WHERE = os.environ["INTERRUPT_AT"]
if WHERE == "import":  # while cli.main imports memoryd.ctl
    class Finder:
        def find_spec(self, name, path=None, target=None):
            if name == "memoryd.ctl.fsenv":
                os.kill(os.getpid(), signal.SIGINT)
            return None
    sys.meta_path.insert(0, Finder())
else:
    module, _, name = WHERE.partition(":")
    import importlib
    mod = importlib.import_module(module)
    real = getattr(mod, name)
    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)
    setattr(mod, name, interrupted)
"""


@pytest.mark.parametrize(
    "where",
    ["import", "memoryd.core.config:load_config", "memoryd.core.fsutil:acquire_lock"],
)
def test_ctrl_c_while_starting_is_one_json_line(
    where: str, tmp_path: Path, config_dict: dict[str, Any]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INTERRUPT)
    cfg = tmp_path / "c.toml"
    keys = ("workspace", "data_dir", "socket")
    cfg.write_text("".join(f"{k} = {json.dumps(config_dict[k])}\n" for k in keys))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env |= {"INTERRUPT_AT": where, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not a shell's SIG_IGN
    )
    assert done.returncode == 130, done.stderr
    lines = json_lines(done.stderr)
    assert [x["event"] for x in lines][-1:] == ["interrupted while starting"]
    assert lines[-1]["signal"] == "SIGINT"


def _with_unused_initializer(model: bytes) -> bytes:
    """The model with one more initializer that no node uses (ModelProto.graph given twice is
    merged by protobuf): onnxruntime warns "Removing initializer 'unused'" on fd 2 when it
    loads it, as it does for many exported models."""
    from memoryd.index import onnxgraph as g

    tensor = g._encode([(1, 0, 1), (2, 0, 1), (8, 2, b"unused")]) + b"\x25\x00\x00\x80\x3f"
    return model + g._encode([(g._MODEL_GRAPH, 2, g._encode([(g._GRAPH_INITIALIZER, 2, tensor)]))])


@pytest.mark.model
def test_onnxruntime_writes_nothing_past_the_json_log(daemon_factory: Any, tmp_path: Path) -> None:
    from memoryd.index.embed import assemble_offline_dir, offline_files

    found = offline_files()
    if found is None:
        pytest.skip("the offline model is not installed")
    onnx, tokenizer = found
    noisy = tmp_path / "noisy.onnx"
    noisy.write_bytes(_with_unused_initializer(onnx.read_bytes()))
    folder = assemble_offline_dir(tmp_path / "model", noisy, tokenizer)
    d = daemon_factory(
        model=True,
        embedding={"model_path": str(folder)},
        logging={"format": "auto", "level": "debug"},
    )
    wait_for(lambda: "embedding model ready" in d.log(), timeout=120)
    assert d.stop() == 0
    lines = json_lines(d.log())
    ready = [x for x in lines if x["event"] == "embedding model ready"]
    assert ready, lines
    assert ready[0]["model"].endswith("@model"), ready  # embedding.model_path's model
