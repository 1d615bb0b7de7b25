"""The offline model (all-MiniLM-L6-v2, int8) run by onnxruntime and tokenizers directly.

fastembed does the same in this case: the tokenizer truncated to tokenizer_config.json's
model_max_length (256) and padded to the longest text of a run, one onnxruntime run, the token
vectors averaged over the attention mask (in float64), then L2-normalised. Importing fastembed
costs the daemon ~26 MB of anonymous memory for code memoryd never runs (image and sparse
models, PIL, huggingface_hub; issue 23 measured it), and its session settings cannot be changed.
Here the session has no memory arena and no memory pattern (onnxruntime plans and keeps one
buffer layout per input shape with it; the backlog's shapes vary with every run), and the
word-embedding table stays in int8 (index/onnxgraph.py rewrites the graph so the rows are looked
up before they are made float; 33 MB less resident, bit-for-bit the same vectors) and the
session drops its copy of the model's bytes (22 MB). The vectors are
fastembed's to float32 rounding (tests/test_embed.py compares them), so the stored vectors
keep their identity.

Only the offline package's model uses this; a model_path or a downloaded model goes through
fastembed, which knows each model's pooling.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.index.onnxgraph import gather_before_dequantize

DEFAULT_MAX_TOKENS = 256


class OnnxEmbedder:
    """A sentence-transformers mean-pooling model from a folder with model.onnx,
    tokenizer.json and tokenizer_config.json. Loads in __init__ (call it on a worker thread);
    embed_batch may be called from several threads at once (onnxruntime allows it)."""

    identity: Any  # set by index/embed.py load_embedder (a ModelIdentity; embed.py imports us)

    def __init__(self, *, model_dir: Path, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = max(1, threads)
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        self._session = ort.InferenceSession(
            _lean_model(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        # onnxruntime's Python session keeps the model's bytes (22 MB) for as long as it lives,
        # only to build the session again if a provider fails; the CPU provider has no fallback.
        if getattr(self._session, "_model_bytes", None) is not None:
            self._session._model_bytes = None
        self._inputs = {i.name for i in self._session.get_inputs()}
        config = _json(model_dir / "tokenizer_config.json")
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.enable_truncation(max_length=int(config.get("model_max_length", DEFAULT_MAX_TOKENS)))
        padding = tok.padding or {}
        tok.enable_padding(
            pad_id=int(padding.get("pad_id", 0)),
            pad_type_id=int(padding.get("pad_type_id", 0)),
            pad_token=str(padding.get("pad_token", "[PAD]")),
        )
        self._tokenizer = tok
        self.dim = int(self._embed(["dimension probe"]).shape[1])

    def _embed(self, texts: Sequence[str], options: Any = None) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feeds["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        tokens = self._session.run(None, feeds, options)[0]
        summed = np.sum(tokens, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(texts)

    def stoppable_batch(self, texts: Sequence[str]) -> tuple[Any, Callable[[], np.ndarray | None]]:
        """(handle, embed): embed() gives the vectors, or None when another thread set
        `handle.terminate = True` while it ran (onnxruntime's RunOptions)."""
        import onnxruntime as ort

        options = ort.RunOptions()

        def embed() -> np.ndarray | None:
            try:
                return self._embed(texts, options)
            except Exception:
                if options.terminate:
                    return None
                raise

        return options, embed


def _lean_model(path: Path) -> str | bytes:
    """The model with its word-embedding table kept in int8 (index/onnxgraph.py: ~33 MB less
    resident, the same vectors), or its path when the rewrite does not apply."""
    lean = gather_before_dequantize(path.read_bytes())
    return str(path) if lean is None else lean


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
