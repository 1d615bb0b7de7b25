"""Embedders, model resolution and the lazy model holder."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from conftest import DEADLINE_S, ROOT, with_notes

from memoryd.core.errors import Unavailable
from memoryd.index import embed
from memoryd.index.embed import FakeEmbedder, ModelHolder, offline_files, resolve_model
from memoryd.search.searcher import SearchRequest


def cfg(**kw: object) -> SimpleNamespace:
    base = dict(
        enabled=True,
        model_path="",
        model="sentence-transformers/all-MiniLM-L6-v2",
        allow_download=False,
        batch_size=8,
        threads=0,
        query_cache_size=4,
    )
    base.update(kw)
    return SimpleNamespace(**base)


def test_importing_embed_loads_no_model_runtime() -> None:
    code = (
        "import sys, memoryd.index.embed; "
        "print(any(m.split('.')[0] in ('fastembed', 'onnxruntime') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.stdout.strip() == "False", out.stderr


def test_fake_embedder_is_deterministic_and_word_sensitive() -> None:
    f = FakeEmbedder()
    a, b, c = f.embed_batch(["red apple pie", "red apple tart", "quantum physics"])
    assert np.allclose(np.linalg.norm([a, b, c], axis=1), 1.0)
    assert a @ b > a @ c
    assert np.array_equal(FakeEmbedder().embed_batch(["red apple pie"])[0], a)
    assert f.seen == ["red apple pie", "red apple tart", "quantum physics"]
    f.fail_after = 3
    with pytest.raises(RuntimeError):
        f.embed_batch(["one more"])


def test_resolution_tiers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, reason = resolve_model(cfg(enabled=False), tmp_path)
    assert model is None and "enabled is false" in reason
    bad = tmp_path / "bad-model"
    bad.mkdir()
    model, _ = resolve_model(cfg(model_path=str(bad)), tmp_path)
    assert model is None or model.tier != "model_path"
    good = tmp_path / "good-model"
    good.mkdir()
    (good / "model.onnx").write_bytes(b"x")
    (good / "tokenizer.json").write_text("{}")
    model, _ = resolve_model(cfg(model_path=str(good)), tmp_path)
    assert model is not None and model.tier == "model_path" and model.model_dir == good
    monkeypatch.setattr(embed, "offline_files", lambda: None)
    model, reason = resolve_model(cfg(), tmp_path)
    assert model is None and "memoryd[offline]" in reason
    model, _ = resolve_model(cfg(allow_download=True), tmp_path)
    assert model is not None and model.tier == "download"


def test_a_model_named_in_the_settings_is_never_the_offline_one_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`model = "BAAI/bge-small-en-v1.5"` with the offline package installed ran all-MiniLM-L6-v2
    and said nothing: the setting did nothing. It is downloaded when downloads are allowed, else
    there is no model and status says why; the default's name still means the offline model."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"x")
    (folder / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(
        embed, "offline_files", lambda: (folder / "model.onnx", folder / "tokenizer.json")
    )
    named = "BAAI/bge-small-en-v1.5"
    model, _ = resolve_model(cfg(model=named, allow_download=True), tmp_path)
    assert model is not None and model.tier == "download" and model.model_name == named
    assert named in embed.model_fix(model) and "network" in embed.model_fix(model)
    model, reason = resolve_model(cfg(model=named), tmp_path)
    assert model is None
    assert named in reason and "allow_download" in reason and "keyword search only" in reason
    for default in ("sentence-transformers/all-MiniLM-L6-v2", embed.OFFLINE_IDENTITY, ""):
        model, _ = resolve_model(cfg(model=default, allow_download=True), tmp_path)
        assert model is not None and model.tier == "offline_package", default
    # with a model_path that cannot be used, `model` names that folder's model: as before
    model, reason = resolve_model(cfg(model=named, model_path=str(tmp_path / "nope")), tmp_path)
    assert model is not None and model.tier == "offline_package" and "nope" in reason


def test_holder_states_and_query_cache() -> None:
    h = ModelHolder(None, description="no model here")
    assert h.state == "none" and h.status()["reason"] == "no model here"
    with pytest.raises(Unavailable):
        h.embed_query("x")
    fired = threading.Event()
    fake = FakeEmbedder()
    h = ModelHolder(lambda: fake, description="fake", query_cache_size=2)
    h.on_ready.append(fired.set)
    h.start()
    assert h.wait_ready(DEADLINE_S) and fired.wait(DEADLINE_S) and h.state == "ready"
    v1 = h.embed_query("hello")
    v2 = h.embed_query("hello")
    assert v1 is v2 and h.cache_info()["hits"] == 1 and len(fake.seen) == 1
    h.embed_query("a")
    h.embed_query("b")
    assert h.cache_info()["size"] == 2  # LRU bound
    with pytest.raises(ValueError):
        v1[0] = 1.0  # cached vectors are read-only


def test_holder_failure_is_reported() -> None:
    def broken() -> FakeEmbedder:
        raise OSError("model.onnx is corrupt")

    h = ModelHolder(broken, description="broken")
    h.start()
    h._thread.join(5)  # type: ignore[union-attr]
    assert h.state == "failed" and "corrupt" in h.reason
    with pytest.raises(Unavailable):
        h.embed_batch(["x"])


@pytest.mark.model
def test_offline_model_loads_and_embeds(tmp_path: Path) -> None:
    if offline_files() is None:
        pytest.skip("memoryd[offline] not installed")
    resolved, _ = resolve_model(cfg(), tmp_path)
    assert resolved is not None and resolved.tier == "offline_package"
    e = embed.load_embedder(resolved, cache_dir=tmp_path)
    assert e.identity.dim == 384
    assert e.identity.key == "sentence-transformers/all-MiniLM-L6-v2-int8/384"
    notes = [
        "the user prefers dark mode in the editor",
        "lunch is at noon",
        "the build uses make",
        "invoices are due monthly",
    ]
    vecs = e.embed_batch(notes)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    q = e.embed_batch(["dark theme preference"])[0]
    assert notes[int(np.argmax(vecs @ q))] == notes[0]
    # assembling the folder again is idempotent
    again, _ = resolve_model(cfg(), tmp_path)
    assert again is not None and again.model_dir == resolved.model_dir


@pytest.mark.model
def test_the_offline_model_without_fastembed_gives_fastembeds_vectors(tmp_path: Path) -> None:
    """index/onnxembed.py runs the offline model itself (no fastembed import): the same vectors
    as fastembed's pipeline for short, long (truncated at 256 tokens) and mixed-length runs, so
    vectors stored by either keep one identity."""
    if offline_files() is None:
        pytest.skip("memoryd[offline] not installed")
    from memoryd.index.onnxembed import OnnxEmbedder

    resolved, _ = resolve_model(cfg(), tmp_path)
    assert resolved is not None and resolved.model_dir is not None
    lean = embed.load_embedder(resolved, cache_dir=tmp_path)
    assert isinstance(lean, OnnxEmbedder)
    fast = embed.FastEmbedEmbedder(
        model_name=resolved.model_name,
        identity_name=resolved.identity_name,
        model_dir=resolved.model_dir,
        cache_dir=tmp_path / "fastembed-cache",
        threads=1,
    )
    assert lean.identity == fast.identity
    texts = [
        "lunch is at noon",
        "Sessions live in Redis for 14 days; the cookie is HttpOnly.",
        " ".join(f"word{i} alpha beta gamma" for i in range(200)),  # far over 256 tokens
        "# Heading\n\n- a list\n- of things, ünïcödé and 数据库",
        "",
    ]
    for batch in (texts, texts[:1], texts[2:3], texts[::-1]):
        a, b = lean.embed_batch(batch), fast.embed_batch(batch)
        assert a.shape == b.shape and a.dtype == np.float32
        assert np.abs(a - b).max() < 1e-5
    handle, run = lean.stoppable_batch(texts[:2])  # a background run a search may stop
    assert np.array_equal(run(), lean.embed_batch(texts[:2]))
    handle, run = lean.stoppable_batch(texts[:2])
    handle.terminate = True
    assert run() is None


def test_close_waits_for_a_model_still_loading() -> None:
    """A daemon stopped while its model loads must not exit under onnxruntime's session set-up
    (the process aborted with "terminate called without an active exception")."""
    gate, loaded = threading.Event(), threading.Event()

    def slow_loader() -> FakeEmbedder:
        gate.wait(10)
        loaded.set()
        return FakeEmbedder()

    holder = ModelHolder(slow_loader, description="slow loader")
    holder.start()
    release = threading.Timer(0.2, gate.set)
    release.start()
    holder.close()
    release.join()
    assert loaded.is_set()


def test_background_runs_stay_within_the_memory_budget() -> None:
    """Long texts go one to a run, short ones several to a run; every text once, longest
    first."""
    from memoryd.index.embed import CHARS_PER_TOKEN, MAX_TOKENS, RUN_TOKENS, budget_runs

    lengths = [2000, 30, 900, 40, 1500, 60, 350, 20, 25, 5000]
    runs = budget_runs(lengths)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:
        tokens = max(min(MAX_TOKENS, lengths[i] // CHARS_PER_TOKEN + 2) for i in run)
        assert len(run) == 1 or len(run) * tokens <= RUN_TOKENS
    assert runs[0] == [9] and [lengths[i] for i in runs[1]] == [2000]  # full length: alone
    assert max(len(r) for r in runs) >= 4  # the short ones share a run
    assert budget_runs([]) == []


def test_a_background_run_waits_while_a_search_is_in_flight() -> None:
    """No background run starts while foreground work holds the gate; it starts once the
    gate is clear, and a holder never waits."""
    holder = ModelHolder(lambda: FakeEmbedder(), description="fake", background_threads=2)
    holder.start()
    assert holder.wait_ready(10)
    holder.gate.hold_max_s = 60.0
    fake = holder._embedder
    assert isinstance(fake, FakeEmbedder)
    done = threading.Event()

    def backlog() -> None:
        holder.embed_background(["a text to embed", "another one"])
        done.set()

    with holder.foreground():
        holder.embed_query("a query runs at once")  # nested: the gate counts holders
        worker = threading.Thread(target=backlog)
        worker.start()
        assert not done.wait(0.3)
        assert fake.seen == ["a query runs at once"]
    assert done.wait(DEADLINE_S)
    worker.join()
    assert sorted(fake.seen[1:]) == ["a text to embed", "another one"]
    assert holder.gate.active == 0
    holder.close()


def test_a_search_stops_a_background_run_in_flight_once() -> None:
    """A search stops `preempt` stoppable runs in flight (the newest first), each once."""
    from memoryd.index.foreground import ForegroundGate

    gate = ForegroundGate(preempt=1)
    old, new = SimpleNamespace(terminate=False), SimpleNamespace(terminate=False)
    with gate.stoppable(old), gate.stoppable(new):
        with gate.held():
            pass
        assert new.terminate and not old.terminate
        with gate.held():
            pass
        assert gate.stopped == 1  # a stopped run is not stopped again; the other is spared
    with gate.held():
        pass
    assert gate.stopped == 1


def test_a_background_run_is_held_back_for_a_bounded_time() -> None:
    """Searches back to back slow the backlog down, never stop it."""
    from memoryd.index.foreground import ForegroundGate

    gate = ForegroundGate(hold_max_s=0.05)
    with gate.held():
        assert gate.wait_clear() is False
    assert gate.held_s > 0
    assert gate.wait_clear() is True


class PoisonedEmbedder(FakeEmbedder):
    """Fails on any batch holding a text with "POISON" in it (a text the model cannot take);
    with `broken`, on every batch (the model itself at fault)."""

    broken = False

    def embed_batch(self, texts: Any) -> np.ndarray:
        if self.broken or any("POISON" in t for t in texts):
            raise RuntimeError("the model cannot take this input")
        return super().embed_batch(texts)


@pytest.mark.backends
def test_a_text_the_model_fails_on_does_not_hold_the_others_back(make_app: Any) -> None:
    """One text the model raised on failed its whole batch, and the worker retried that batch
    forever: every text behind it stayed without a vector. Now it is set aside (keyword search
    still finds it), the rest of its batch and the backlog are embedded, and status counts it;
    a model that fails on every text is still an error that is retried."""
    fake = PoisonedEmbedder()
    app = make_app(model=ModelHolder(lambda: fake, description="poisoned fake"))
    app.model.start()
    assert app.model.wait_ready(DEADLINE_S)
    notes = {f"n{i}.md": f"# Harbour {i}\n\nThe harbour log, page {i}.\n" for i in range(12)}
    notes["n5.md"] = "# Harbour 5\n\nA POISON chunk among the pages.\n"  # in a batch of 8
    with_notes(app, notes)
    app.memories.add("the POISON pill text")  # alone: its batch of one is probed
    app.memories.add("harbour memory")
    app.embedder.run()
    status = app.status()["vectors"]
    assert status["failed"] == 2 and status["pending"] == 2 and status["done"] == 12
    assert app.embedder.run()["embedded"] == 0  # set aside: no retry loop, no error
    hits = app.searcher.search(SearchRequest(query="POISON", mode="keyword"))["hits"]
    assert len(hits) == 2  # still found by keyword
    fake.broken = True
    app.memories.add("a text after the model broke")
    app.memories.add("and another one")
    with pytest.raises(RuntimeError):
        app.embedder.run()
    assert app.status()["vectors"]["failed"] == 2  # not blamed on the texts


@pytest.mark.backends
def test_a_query_the_model_fails_on_is_answered_by_keywords(make_app: Any) -> None:
    """A query the model raised on was an internal error (-32603) in every mode: auto and
    hybrid now answer it by keywords and say so (model_state), vector mode refuses it."""
    from memoryd.core.errors import Unavailable

    fake = PoisonedEmbedder()
    app = make_app(model=ModelHolder(lambda: fake, description="poisoned fake"))
    app.model.start()
    assert app.model.wait_ready(DEADLINE_S)
    app.memories.add("a POISON word here")
    app.memories.add("a plain word there")
    app.embedder.run()
    for mode in ("auto", "hybrid"):
        res = app.searcher.search(SearchRequest(query="POISON word", mode=mode))
        assert res["mode"] == "keyword" and res["model_state"] == "unable to embed this query"
        assert res["hits"][0]["content"] == "a POISON word here"
    with pytest.raises(Unavailable, match="failed on this query"):
        app.searcher.search(SearchRequest(query="POISON word", mode="vector"))
    plain = app.searcher.search(SearchRequest(query="plain word", mode="auto"))
    assert plain["mode"] == "hybrid" and "model_state" not in plain


def test_an_unusable_model_path_is_named_in_the_reason_of_the_model_used(tmp_path: Path) -> None:
    """`model_path` pointing at a file (or an empty folder): the next model in the order is
    used, and status's reason says why the configured folder was not (before: only a log line,
    and status named the offline model as if model_path were not set)."""
    from memoryd.core.config import Config

    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty").mkdir()
    for where, words in (("afile", "is not a folder"), ("empty", "has no .onnx file")):
        cfg = Config.from_dict({"embedding": {"model_path": str(tmp_path / where)}})
        _, reason = resolve_model(cfg.embedding, tmp_path / "data")
        assert reason.startswith(f"embedding.model_path {tmp_path / where} {words}; "), reason


def model_folder(where: Path, weights: bytes, tokenizer: str = '{"v": 1}') -> Path:
    where.mkdir(parents=True)
    (where / "model.onnx").write_bytes(weights)
    (where / "tokenizer.json").write_text(tokenizer)
    (where / "README.md").write_text("a model")
    return where


def test_a_model_folders_fingerprint_is_its_weights_and_tokenizer(tmp_path: Path) -> None:
    """embedding.model_path's model is named by its folder and this fingerprint: other weights
    of the same size at the same path are another model; a copy elsewhere is the same."""
    from memoryd.index.identity import folder_fingerprint

    one = folder_fingerprint(model_folder(tmp_path / "a" / "model", b"weights-1" * 1000))
    assert len(one) == 12
    assert folder_fingerprint(model_folder(tmp_path / "b" / "model", b"weights-1" * 1000)) == one
    assert folder_fingerprint(model_folder(tmp_path / "c" / "model", b"weights-2" * 1000)) != one
    vocab = model_folder(tmp_path / "d" / "model", b"weights-1" * 1000, '{"v": 2}')
    assert folder_fingerprint(vocab) != one  # another tokenizer gives other vectors too
    (tmp_path / "a" / "model" / "README.md").write_text("edited")
    assert folder_fingerprint(tmp_path / "a" / "model") == one  # what is not the model


@pytest.mark.model
def test_a_model_replaced_at_the_same_path_is_another_model(tmp_path: Path) -> None:
    """The real loader on a model_path folder (the offline model's files): model.onnx replaced
    by other bytes that load to the same dimension (an unused initializer added) keeps the
    folder's name but not its identity, so its vectors are made again; the older key is the one
    adopted from before fingerprints."""
    from test_log_lines import _with_unused_initializer

    found = offline_files()
    if found is None:
        pytest.skip("the offline model is not installed")
    onnx, tokenizer = found
    folder = embed.assemble_offline_dir(tmp_path / "model", onnx, tokenizer)
    config = cfg(model_path=str(folder))

    def identity() -> Any:
        resolved, _ = resolve_model(config, tmp_path)
        assert resolved is not None and resolved.tier == "model_path"
        return embed.load_embedder(resolved, cache_dir=tmp_path).identity

    first = identity()
    assert first.name.startswith("sentence-transformers/all-MiniLM-L6-v2@model#")
    assert first.adopts == "sentence-transformers/all-MiniLM-L6-v2@model/384"
    assert identity() == first  # loaded again, unchanged: the same model
    swapped = folder / "model.onnx"
    swapped.unlink()  # (a symlink to the package's file)
    swapped.write_bytes(_with_unused_initializer(onnx.read_bytes()))
    second = identity()
    assert second.dim == first.dim and second.name != first.name
    assert second.adopts == first.adopts
