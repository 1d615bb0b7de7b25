"""float16 rows made float32 for the vector cache's re-scoring (memoryd/search/halfrows.py): by
onnxruntime's Cast where it is loaded, else by numpy, the very same floats either way."""

from __future__ import annotations

import threading

import numpy as np
import onnxruntime  # noqa: F401 - loaded, as the offline model loads it: halfrows uses it
import pytest

from memoryd.index import onnxgraph
from memoryd.search import halfrows, vecindex


def _numpy(full: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return full[rows].astype(np.float32)


def _blocks(full: np.ndarray, rows: np.ndarray) -> np.ndarray:
    out = np.full((len(rows), full.shape[1]), np.nan, dtype=np.float32)
    for start, block in halfrows.float32_blocks(full, rows):
        out[start : start + len(block)] = block
    return out


@pytest.fixture
def numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(halfrows, "_session", lambda: None)


def test_the_cast_model_runs_and_converts_every_float16() -> None:
    session = halfrows._session()
    assert session is not None, "onnxruntime is loaded: the Cast session must be made"
    every = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(256, 256)
    got = session.run(None, {"half": every})[0]
    want = every.astype(np.float32)
    assert got.dtype == np.float32
    # bit for bit: subnormals, zeros of both signs, infinities; NaNs stay NaN
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    assert onnxgraph.half_to_float()[:1] == b"\x08"  # ir_version first


@pytest.mark.parametrize("count", [0, 1, halfrows.BLOCK_ROWS - 1, halfrows.BLOCK_ROWS, 1000])
def test_blocks_are_the_rows_as_float32(count: int) -> None:
    rng = np.random.default_rng(count)
    full = rng.normal(size=(3000, 48)).astype(np.float16)
    full[5, :3] = [np.inf, -np.inf, 6e-8]  # an infinity and a subnormal among them
    rows = rng.integers(0, len(full), count)
    rows[: min(count, 3)] = 5
    assert np.array_equal(_blocks(full, rows), _numpy(full, rows))


def test_numpy_path_gives_the_same_floats(numpy_only: None) -> None:
    rng = np.random.default_rng(7)
    full = rng.normal(size=(5000, 384)).astype(np.float16)
    rows = rng.choice(len(full), 2000, replace=False)
    assert halfrows._session() is None
    assert np.array_equal(_blocks(full, rows), _numpy(full, rows))


def test_rescore_is_the_same_with_and_without_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    full = rng.normal(size=(20000, 384)).astype(np.float16)
    for _ in range(5):
        rows = rng.choice(len(full), 2000, replace=False)
        query = rng.normal(size=384).astype(np.float32)
        fast = vecindex.rescore(full, rows, query)
        with monkeypatch.context() as m:
            m.setattr(halfrows, "_session", lambda: None)
            slow = vecindex.rescore(full, rows, query)
        assert np.array_equal(fast, slow)


def test_threads_use_their_own_buffers() -> None:
    rng = np.random.default_rng(11)
    full = rng.normal(size=(4000, 64)).astype(np.float16)
    jobs = [rng.integers(0, len(full), 900) for _ in range(8)]
    wrong: list[int] = []

    def work(i: int) -> None:
        for _ in range(20):
            if not np.array_equal(_blocks(full, jobs[i]), _numpy(full, jobs[i])):
                wrong.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_a_failing_session_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    real = halfrows._session()
    assert real is not None

    class Broken:
        def io_binding(self) -> object:
            return real.io_binding()

        def run_with_iobinding(self, binding: object) -> None:
            raise RuntimeError("no")

    monkeypatch.setattr(halfrows, "_SESSION", Broken())
    monkeypatch.setattr(halfrows, "_FAILED", False)
    monkeypatch.setattr(halfrows, "_LOCAL", threading.local())
    rng = np.random.default_rng(5)
    full = rng.normal(size=(1000, 32)).astype(np.float16)
    rows = rng.integers(0, len(full), 700)
    assert np.array_equal(_blocks(full, rows), _numpy(full, rows))
    assert halfrows._FAILED and halfrows._session() is None
