"""What a model's vectors are: its identity (name and dimension, stored with every vector) and
their normalisation (unit length, so a dot product is the cosine).

A local model (`embedding.model_path`) is named by its folder and a fingerprint of what makes
its vectors (the weights and the tokenizer, `folder_fingerprint`): other weights copied to the
same path, with the same name and dimension, are another model, re-embedded as a change of
model is, not taken for the old one."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# the files of a model folder whose bytes decide its vectors (an .onnx file's weights, external
# weights beside it, the tokenizer); the rest (README, configs fastembed generates) do not count
MODEL_FILES = (".onnx", ".onnx_data", ".data", "tokenizer.json", "vocab.txt")
FINGERPRINT_CHARS = 12


@dataclass(frozen=True)
class ModelIdentity:
    name: str
    dim: int
    # the key of vectors made before local models had a fingerprint (the folder's name alone):
    # taken over, once, by this model rather than embedded again (store/vectors.ensure_model)
    adopts: str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return f"{self.name}/{self.dim}"


def normalise(vecs: np.ndarray) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vecs / norms


def folder_fingerprint(folder: Path) -> str:
    """A hash of every model file under `folder` (MODEL_FILES: names relative to it, sizes and
    bytes, symlinks followed), read once at load (~0.2 s for 100 MB)."""
    h = hashlib.sha256()
    files: list[tuple[str, Path]] = []
    for dirpath, _dirs, names in os.walk(folder, followlinks=True):
        for name in names:
            if name.endswith(MODEL_FILES):
                path = Path(dirpath, name)
                files.append((path.relative_to(folder).as_posix(), path))
    for rel, path in sorted(files):
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            h.update(f"{rel}\0{size}\0".encode())
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()[:FINGERPRINT_CHARS]
