"""Queries first: a running batch never blocks a query, new text is embedded before the backlog."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from conftest import DEADLINE_S, wait_for

from memoryd.index.embed import FakeEmbedder, ModelHolder
from memoryd.store import entries


class GatedFake(FakeEmbedder):
    """Background batches wait for the test to open the gate, one batch per release."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Semaphore(0)
        self.inside = threading.Event()
        self.batches: list[list[str]] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if threading.current_thread().name.startswith("memoryd-embed") and texts:
            self.inside.set()
            assert self.gate.acquire(timeout=30), "the test never opened the gate"
            self.batches.append(list(texts))
        return super().embed_batch(texts)


def gated_app(make_app: Any, notes: int, **sections: Any) -> tuple[Any, GatedFake]:
    fake = GatedFake()
    holder = ModelHolder(lambda: fake, description="gated fake")
    app = make_app(model=holder, **sections)
    ws = app.cfg.workspace
    for i in range(notes):
        (ws / f"n{i:02d}.md").write_text(f"# Note {i}\n\nbacklog text number {i} about otters\n")
    app.indexer.reconcile()
    holder.start()
    assert holder.wait_ready(5)
    app.embedder.start()
    app.embedder.wake()
    return app, fake


def in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


def test_a_batch_in_progress_does_not_block_a_query_or_an_add(make_app: Any) -> None:
    app, fake = gated_app(make_app, 10)
    try:
        assert fake.inside.wait(DEADLINE_S)  # a background batch is running and held
        t, out = in_thread(lambda: app.model.embed_query("where do otters sleep"))
        t.join(5)
        assert out and out[0].shape == (64,), "the query waited behind the batch"
        t, out = in_thread(lambda: app.memories.add("otters hold hands while they sleep"))
        t.join(5)
        assert out, "add's near-duplicate check waited behind the batch"
        assert app.status()["vectors"]["embedding"] is True
    finally:
        for _ in range(20):
            fake.gate.release()


def hashes_of(app: Any, path: str) -> set[str]:
    return set(
        app.store.read(
            lambda con: [
                r[0]
                for r in con.execute(
                    "SELECT e.content_hash FROM entries e JOIN documents d"
                    " ON d.id = e.document_id WHERE d.path = ?",
                    (path,),
                )
            ]
        )
    )


def embedded(app: Any, hashes: set[str]) -> bool:
    def q(con: Any) -> bool:
        return all(
            con.execute("SELECT 1 FROM embeddings WHERE content_hash = ?", (h,)).fetchall()
            for h in hashes
        )

    return app.store.read(q)


def test_an_edited_note_is_embedded_before_the_backlog(make_app: Any) -> None:
    app, fake = gated_app(make_app, 30, embedding={"batch_size": 2})
    try:
        assert fake.inside.wait(DEADLINE_S)
        fake.gate.release()  # first batch: the newest notes of the backlog
        wait_for(lambda: len(fake.batches) == 1)
        assert all("number 29" in t or "number 28" in t for t in fake.batches[0])
        # n00 is the oldest note: without priority it would be embedded last
        (app.cfg.workspace / "n00.md").write_text("# Note 0\n\nedited: zebras, not otters\n")
        app.indexer.sync_paths([app.cfg.workspace / "n00.md"])
        edited = hashes_of(app, "n00.md")
        fake.gate.release()  # the batch that was already running when the note changed
        fake.gate.release()  # the next batch takes the edited note first
        wait_for(lambda: len(fake.batches) == 3)
        wait_for(lambda: embedded(app, edited))
        # in the batch after the one running when it changed (or the very next one, when the
        # change came between two batches: a batch of short texts is one model run)
        assert any("zebras" in t for b in fake.batches[1:3] for t in b), fake.batches
        assert app.embedder.pending() > 20  # the backlog is far from done
    finally:
        for _ in range(40):
            fake.gate.release()


def test_status_reports_rate_eta_and_current(make_app: Any) -> None:
    app, fake = gated_app(make_app, 12, embedding={"batch_size": 2})
    try:
        for _ in range(3):
            fake.gate.release()
        wait_for(lambda: len(fake.batches) == 3)
        wait_for(lambda: app.embedder.embedded_total >= 6)
        vec = app.status()["vectors"]
        assert vec["embedding"] is True  # held in the fourth batch
        assert vec["rate_per_s"] and vec["rate_per_s"] > 0
        assert vec["eta_s"] is not None and vec["eta_s"] >= 0
        assert vec["current"] in {f"n{i:02d}.md" for i in range(12)}
        assert vec["pending"] == 6 and vec["done"] == 6
    finally:
        for _ in range(20):
            fake.gate.release()
    wait_for(lambda: app.embedder.pending() == 0 and not app.embedder.running)
    vec = app.status()["vectors"]
    assert vec["rate_per_s"] is None and vec["eta_s"] is None and vec["current"] is None


def test_index_progress_while_a_reconcile_runs(make_app: Any) -> None:
    app = make_app(model=None)
    for i in range(5):
        (app.cfg.workspace / f"p{i}.md").write_text(f"# P{i}\n\ntext\n")
    seen: list[Any] = []
    real = app.indexer._index_one

    def spy(*args: Any, **kw: Any) -> Any:
        seen.append(app.status()["index"]["progress"])
        return real(*args, **kw)

    app.indexer._index_one = spy
    app.jobs.run_now("reconcile")
    assert seen[0] == {"done": 0, "total": 0}
    last = seen[-1]
    assert (last["done"], last["total"]) == (4, 5)
    assert last["rate_per_s"] > 0 and last["eta_s"] >= 0  # files per second, seconds left
    assert app.status()["index"]["progress"] is None
    assert len(app.store.read(entries.documents)) == 5


def test_progress_lines_in_the_log_while_working(
    make_app: Any, monkeypatch: Any, capsys: Any
) -> None:
    monkeypatch.setattr("memoryd.serve.app.PROGRESS_EVERY_S", 0.0)
    app = make_app(embedding={"batch_size": 2})
    for i in range(6):
        (app.cfg.workspace / f"l{i}.md").write_text(f"# L{i}\n\nlog line text {i}\n")
    app.jobs.run_now("reconcile")
    out = capsys.readouterr().out
    assert "indexing" in out and "total=6" in out and "eta_s=" in out
    assert "l3.md" not in "".join(ln for ln in out.splitlines() if "[info" in ln)
    app.model.start()
    assert app.model.wait_ready(5)
    app.embedder.log_every = 0.0
    app.embedder.run()
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "embedding " in ln and "rate_per_s=" in ln]
    assert len(lines) >= 2 and "pending=" in lines[0] and "current=" in lines[0]


def test_pending_order_newest_rows_first_then_the_backlog(make_app: Any) -> None:
    from memoryd.store import vectors

    app = make_app(model=None)
    for i in range(10):
        (app.cfg.workspace / f"o{i}.md").write_text(f"# O{i}\n\nold text {i}\n")
    app.indexer.reconcile()
    (app.cfg.workspace / "o0.md").write_text("# O0\n\nrewritten\n")  # newest rows now
    app.indexer.sync_paths([app.cfg.workspace / "o0.md"])
    model_id = app.store.run_write(lambda con: vectors.ensure_model(con, "m/4", "m", 4, 1.0))
    got = app.store.read(lambda con: vectors.pending_newest(con, model_id, 100, fresh_rows=3))
    assert [src for _, _, src in got[:2]] == ["o0.md", "o9.md"]  # the fresh rows, newest first
    assert len(got) == 10 and len({h for h, _, _ in got}) == 10  # then the rest, once each
    assert "rewritten" in got[0][1]
    first = app.store.read(lambda con: vectors.pending_newest(con, model_id, 1))
    assert first[0][2] == "o0.md"


def test_after_a_full_look_a_wake_up_reads_only_what_changed(make_app: Any) -> None:
    """Once the worker has seen every text embedded, it looks only at entries written since and
    at memories (whose text can change in place), not at every hash in the store; what it finds
    and counts is what the full look finds."""
    from memoryd.index import embedworker
    from memoryd.store import vectors

    fake = FakeEmbedder()
    holder = ModelHolder(lambda: fake, description="fake")
    app = make_app(model=holder)
    for i in range(12):
        (app.cfg.workspace / f"n{i:02d}.md").write_text(f"# N{i}\n\nold note {i} about otters\n")
    app.indexer.reconcile()
    old = app.memories.add("an old memory about beavers").id
    holder.start()
    assert holder.wait_ready(5)
    assert app.embedder.run()["pending"] == 0
    assert app.embedder.run(report=False) == {"embedded": 0}
    assert app.embedder._clear_below is not None  # the full look found nothing left
    calls: list[str] = []
    full, since = vectors.pending_newest, vectors.pending_since
    try:
        embedworker.vectors.pending_newest = lambda *a, **k: calls.append("full") or full(*a, **k)  # type: ignore[assignment]
        embedworker.vectors.pending_since = lambda *a, **k: calls.append("since") or since(*a, **k)  # type: ignore[assignment]
        app.memories.update(old, {"content": "an old memory about badgers, rewritten"})
        (app.cfg.workspace / "n00.md").write_text("# N0\n\nedited: zebras\n")
        app.indexer.sync_paths([app.cfg.workspace / "n00.md"])
        assert app.embedder.pending() == 2 == app.embedder.counts()["pending"]
        app.embedder.run()
    finally:
        embedworker.vectors.pending_newest = full  # type: ignore[assignment]
        embedworker.vectors.pending_since = since  # type: ignore[assignment]
    assert calls and set(calls) == {"since"}
    assert any("badgers" in t for t in fake.seen) and any("zebras" in t for t in fake.seen)
    assert app.embedder.pending() == 0 == app.embedder.counts()["pending"]


def test_a_worker_woken_without_pause_still_trims(make_app: Any, monkeypatch: Any) -> None:
    """Adds every few seconds never leave the worker idle for IDLE_TRIM_S (their vectors come
    from the near-duplicate check): a wake-up trims once BUSY_TRIM_S have passed since the last
    trim, so freed memory goes back while the daemon is busy too (issue 23.2)."""
    from memoryd.index import embedworker

    fake = FakeEmbedder()
    holder = ModelHolder(lambda: fake, description="fake")
    app = make_app(model=holder)
    holder.start()
    assert holder.wait_ready(5)
    trims: list[float] = []
    monkeypatch.setattr(embedworker.malloc, "trim", lambda: trims.append(1.0) or True)
    monkeypatch.setattr(embedworker, "BUSY_TRIM_S", 0.0)
    app.embedder.start()
    for _ in range(3):
        before = len(trims)
        app.memories.add(f"a memory about otters number {before}")
        app.embedder.wake()
        wait_for(lambda before=before: len(trims) > before, timeout=10)


def test_polled_counts_follow_every_batch_and_cost_nothing_between(
    make_app: Any, monkeypatch: Any
) -> None:
    """status is polled (the web page every 2 s): the counts are read once per data version, so
    a store where nothing was written answers from memory, and every committed batch shows."""
    from memoryd.store import vectors

    app, fake = gated_app(make_app, 8, embedding={"batch_size": 2})
    reads: list[int | None] = []
    real = vectors._counts
    monkeypatch.setattr(vectors, "_counts", lambda con, m: reads.append(m) or real(con, m))
    try:
        assert fake.inside.wait(DEADLINE_S)  # the first batch is held: nothing commits meanwhile
        first = app.status()["vectors"]["pending"]
        assert first == 8
        before = len(reads)
        for _ in range(5):
            assert app.status()["vectors"]["pending"] == first
        assert len(reads) == before  # answered from memory
        for done in (2, 4):
            fake.gate.release()
            wait_for(lambda done=done: app.status()["vectors"]["pending"] == 8 - done)
    finally:
        for _ in range(10):
            fake.gate.release()
    wait_for(lambda: app.status()["vectors"]["pending"] == 0)


def test_the_first_index_of_a_new_workspace_is_embedded_while_it_runs(
    make_app: Any, monkeypatch: Any
) -> None:
    """On a first start the model is ready before any text is indexed (nothing pending then):
    the texts read so far are embedded while the rest of a large workspace is read, as after a
    restart, not only once the whole first index is done (stop 37's walk: 15K notes, vectors
    0/23000 for the three minutes of the first index)."""
    monkeypatch.setattr("memoryd.serve.app.PROGRESS_EVERY_S", 0.0)  # each file a log line
    app = make_app()
    for i in range(60):
        (app.cfg.workspace / f"n{i:02d}.md").write_text(f"# N{i}\n\nnote text {i}\n")
    real = app.indexer._index_one
    gate = threading.Event()

    def slow(state: Any, *args: Any, **kw: Any) -> Any:
        if state.path == "n59.md":  # the last file waits until the test has looked
            assert gate.wait(DEADLINE_S), "the test never let the index end"
        return real(state, *args, **kw)

    app.indexer._index_one = slow
    app.start(jobs=False)
    try:
        wait_for(lambda: app.embedder.embedded_total > 0)
        assert not app.ready.is_set()  # still the first index
    finally:
        gate.set()
    assert app.ready.wait(DEADLINE_S)
