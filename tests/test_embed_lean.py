"""The offline model's graph with its word-embedding rows looked up before they are made float
(index/onnxgraph.py): the same outputs bit for bit, less memory (issue 23.2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memoryd.index.embed import offline_files
from memoryd.index.onnxgraph import gather_before_dequantize


def _session(model: bytes) -> object:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def test_a_model_without_the_pattern_is_left_alone() -> None:
    assert gather_before_dequantize(b"") is None
    assert gather_before_dequantize(b"\x0f\xff not a model") is None
    assert gather_before_dequantize(bytes(range(256)) * 8) is None


def test_the_rewritten_offline_model_gives_the_same_outputs_bit_for_bit() -> None:
    files = offline_files()
    if files is None:
        pytest.skip("memoryd[offline] not installed")
    original = files[0].read_bytes()
    lean = gather_before_dequantize(original)
    assert lean is not None
    # the folded float table is gone from the graph; the int8 table and its scales stay
    assert b"word_embeddings.weight_f" in original and b"word_embeddings.weight_f" not in lean
    assert b"word_embeddings.weight_q" in lean and b"word_embeddings.weight_scale" in lean
    assert gather_before_dequantize(lean) is None  # nothing left to rewrite
    a, b = _session(original), _session(lean)
    rng = np.random.default_rng(7)
    for batch, length in ((1, 7), (3, 40), (2, 256)):
        ids = rng.integers(999, 30_000, size=(batch, length), dtype=np.int64)
        ids[:, 0], ids[:, -1] = 101, 102
        mask = np.ones_like(ids)
        mask[-1, length // 2 :] = 0
        ids[-1, length // 2 :] = 0
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        names = {i.name for i in a.get_inputs()}  # type: ignore[attr-defined]
        feeds = {k: v for k, v in feeds.items() if k in names}
        out_a = a.run(None, feeds)[0]  # type: ignore[attr-defined]
        out_b = b.run(None, feeds)[0]  # type: ignore[attr-defined]
        assert out_a.shape == out_b.shape and np.array_equal(out_a, out_b)


def test_the_offline_embedder_keeps_no_copy_of_the_model_bytes(tmp_path: Path) -> None:
    if offline_files() is None:
        pytest.skip("memoryd[offline] not installed")
    from types import SimpleNamespace

    from memoryd.index import embed

    cfg = SimpleNamespace(
        enabled=True,
        model_path="",
        model="sentence-transformers/all-MiniLM-L6-v2",
        allow_download=False,
    )
    resolved, _ = embed.resolve_model(cfg, tmp_path)
    assert resolved is not None and resolved.tier == "offline_package"
    lean = embed.load_embedder(resolved, cache_dir=tmp_path)
    assert getattr(lean._session, "_model_bytes", None) is None  # type: ignore[attr-defined]
    assert lean.embed_batch(["lunch is at noon"]).shape == (1, 384)
