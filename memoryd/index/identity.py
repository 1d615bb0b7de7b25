"""What a model's vectors are: its identity (name and dimension, stored with every vector) and
their normalisation (unit length, so a dot product is the cosine)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ModelIdentity:
    name: str
    dim: int

    @property
    def key(self) -> str:
        return f"{self.name}/{self.dim}"


def normalise(vecs: np.ndarray) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vecs / norms
