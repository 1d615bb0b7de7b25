"""Search by meaning while the model changes under a store that holds vectors: no search compares
a query embedded by one model with the vectors of another (two models of one dimension, as
multilingual-e5-small and all-MiniLM-L6-v2 are, included), and vector mode says why it cannot
answer instead of answering "no results"."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from conftest import DEADLINE_S, q, wait_for

from memoryd.agents.formats import fmt_hits
from memoryd.core.errors import Unavailable
from memoryd.ctl.output import pending_note
from memoryd.index.embed import FakeEmbedder, ModelHolder
from memoryd.index.embedworker import ModelNotActive

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

TEXT = "switching models keeps search up"


class Twin(FakeEmbedder):
    """Another model of the same dimension whose vectors happen to be the fake's: a search
    that compared them with the fake's would find the fake's texts by meaning."""

    def __init__(self) -> None:
        super().__init__(name="fake-twin")


def ready(embedder: FakeEmbedder) -> ModelHolder:
    """A holder whose model is ready at once; the App's worker has not registered it yet."""
    holder = ModelHolder(None, description=f"{embedder.identity.name} (test)")
    holder.set_embedder(embedder)
    return holder


def embedded_by_fake(make_app: Any) -> None:
    """A store whose every text has a vector of the fake model, then closed."""
    first = make_app(dailylog={"enabled": False})
    first.memories.add(TEXT)
    first.model.start()
    assert first.model.wait_ready(30)
    first.embedder.run()
    assert q(first, "switching models", mode="vector")["hits"]
    make_app.close(first)


def test_a_new_model_never_reads_the_old_models_vectors_of_the_same_dimension(
    make_app: Any,
) -> None:
    embedded_by_fake(make_app)
    twin = Twin()
    app = make_app(model=ready(twin), dailylog={"enabled": False})
    # the store's active model is still the fake: the twin's query must not be compared to it
    res = q(app, "switching models", mode="hybrid", explain=True)
    assert res["mode"] == "keyword" and res["hits"]
    assert all(h["explain"]["similarity"] is None for h in res["hits"])
    with pytest.raises(Unavailable, match="no vectors of fake-twin yet"):
        q(app, "switching models", mode="vector")
    assert q(app, "switching models", mode="auto")["mode"] == "keyword"
    app.embedder.run()  # the twin's own vectors: now it answers by meaning
    assert q(app, "switching models", mode="hybrid")["mode"] == "hybrid"
    assert q(app, "switching models", mode="vector")["hits"]
    keys = app.store.read(lambda con: con.execute("SELECT key FROM models").fetchall())
    assert keys == [("fake-twin/64",)]


def test_vector_mode_during_a_first_backfill_says_why_it_has_nothing(make_app: Any) -> None:
    app = make_app(model=ready(FakeEmbedder()), dailylog={"enabled": False})
    app.memories.add(TEXT)
    with pytest.raises(Unavailable, match="no vectors of fake yet") as err:
        q(app, "switching models", mode="vector")
    assert "memoryctl status --watch" in str(err.value)
    assert q(app, "switching models", mode="hybrid")["mode"] == "keyword"
    app.embedder.run()
    assert q(app, "switching models", mode="vector")["hits"]
    # a question nothing answers, once there are vectors, is no error: no results
    assert q(app, "quantum chromodynamics lattice", mode="vector")["hits"] == []


def test_vector_mode_on_an_empty_store_answers_no_results(make_app: Any) -> None:
    app = make_app(model=ready(FakeEmbedder()), dailylog={"enabled": False})
    assert q(app, "anything at all", mode="vector")["hits"] == []


class Broken:
    def __call__(self) -> Any:
        raise OSError("model.onnx: Protobuf parsing failed")


@pytest.mark.parametrize(
    ("state", "said"),
    [
        ("none", "vector search needs an embedding model: no model here (test)"),
        ("failed", "embedding model: model failed to load: model.onnx: Protobuf parsing failed"),
        ("loading", "still loading"),
    ],
)
def test_vector_mode_says_why_the_model_cannot_answer(make_app: Any, state: str, said: str) -> None:
    if state == "none":
        holder = ModelHolder(None, description="no model here (test)")
    elif state == "failed":
        holder = ModelHolder(Broken(), description="broken (test)")
        holder.start()
        holder._thread.join(30)  # type: ignore[union-attr]
    else:
        holder = ModelHolder(lambda: FakeEmbedder(), description="slow (test)")
        holder.state = "loading"
    assert holder.state == state
    app = make_app(model=holder, dailylog={"enabled": False})
    app.memories.add(TEXT)
    with pytest.raises(Unavailable, match="vector search") as err:
        q(app, "switching models", mode="vector")
    assert said in str(err.value)
    assert q(app, "switching models", mode="auto")["hits"]  # keywords answer auto


@pytest.mark.parametrize(
    "result",
    [
        {"mode": "keyword", "model_state": "failed", "hits": []},
        {"mode": "keyword", "model_state": "loading", "hits": []},
        {"mode": "vector", "pending_vectors": 3, "hits": []},
    ],
)
def test_every_door_words_a_keyword_only_answer_as_it_is(result: dict[str, Any]) -> None:
    """memoryctl's note and the MCP tool's header: "the embedding model is failed" was neither
    English nor true for vector mode, which answers by no keyword."""
    texts = [pending_note(result) or "", fmt_hits(result)]
    for text in texts:
        assert "is failed" not in text
        if result["mode"] == "vector":
            assert "keyword" not in text and "not embedded yet" in text
        if result.get("model_state") == "failed":
            assert "failed to load" in text


def test_a_search_on_a_shared_database_whose_model_another_daemon_changed(
    make_app: Any, new_store: Any, backend: str, tmp_path: Any
) -> None:
    """Two daemons of one database with models of one dimension (docs/team.md: they must
    share one): the one whose model is no longer the database's compares nothing."""
    if backend != "postgres":
        pytest.skip("a shared database is PostgreSQL's")
    store = new_store()
    a = make_app(store=store, dailylog={"enabled": False})
    a.memories.add(TEXT)
    a.model.start()
    assert a.model.wait_ready(30)
    a.embedder.run()
    b = make_app(
        model=ready(Twin()),
        store={**store, "workspace_id": "b"},
        workspace=str(tmp_path / "b-ws"),
        data_dir=str(tmp_path / "b-data"),
        socket=str(tmp_path / "b.sock"),
        dailylog={"enabled": False},
    )
    b.embedder.run()  # the twin is the database's model now, complete
    assert q(b, "switching models", mode="vector")["hits"]
    res = q(a, "switching models", mode="hybrid", explain=True)
    assert all(h["explain"]["similarity"] is None for h in res["hits"])
    with pytest.raises(Unavailable, match="same model"):
        q(a, "switching models", mode="vector")
    # and its worker writes no vector of a model the database dropped (a foreign key error
    # at every retry before), saying why in status
    a.memories.add("a second memory while the models differ")
    with pytest.raises(ModelNotActive, match="must use the same embedding"):
        a.embedder.run()
    keys = a.store.read(lambda con: con.execute("SELECT key FROM models").fetchall())
    assert keys == [("fake-twin/64",)]


class Gated(FakeEmbedder):
    """A model whose runs wait for `go` (a long backlog, a slow model: multilingual-e5-small
    embeds ~4 texts a second on two loaded cores); `runs` counts the runs begun."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()
        self.runs = 0

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.runs += 1
        assert self.go.wait(DEADLINE_S)
        return super().embed_batch(texts)


def backlog(make_app: Any, texts: int = 12) -> tuple[Any, Gated]:
    gated = Gated()
    holder = ModelHolder(None, description="gated (test)")
    app = make_app(model=holder, dailylog={"enabled": False}, embedding={"batch_size": 1})
    for i in range(texts):  # (no model yet: add embeds nothing for its near-duplicate check)
        app.memories.add(f"memory number {i} of a long backlog")
    holder.set_embedder(gated)
    return app, gated


def test_the_backfill_job_leaves_a_backlog_to_the_worker_embedding_it(make_app: Any) -> None:
    """`memoryctl jobs run backfill` (and the scheduled job, overdue at a start) during a
    change of model waited for the worker's whole backlog: hours at 100K chunks; memoryctl
    timed out."""
    app, gated = backlog(make_app)
    app.embedder.start()
    wait_for(lambda: gated.runs >= 1)  # the worker is at it, held in its first run
    job = ThreadResult(lambda: app.jobs.run_now("backfill"))
    done = job.wait()
    gated.go.set()
    assert done, "the backfill job waited for the worker's backlog"
    assert job.value["error"] is None
    assert job.value["result"]["running"] is True and job.value["result"]["embedded"] == 0


def test_a_stop_ends_the_backfill_jobs_run_after_its_batch(make_app: Any) -> None:
    """The job's run (when the worker was idle at that moment) went on with the backlog after
    the daemon was told to stop, and App.close waited for it in jobs.shutdown: SIGTERM during
    a change of model did not stop the daemon until SIGKILL."""
    app, gated = backlog(make_app)
    job = ThreadResult(lambda: app.jobs.run_now("backfill"))
    wait_for(lambda: gated.runs >= 1)
    app.embedder.stopping()  # what App.close does first
    gated.go.set()
    assert job.wait()
    assert job.value["result"]["embedded"] <= 1
    assert app.embedder.counts()["pending"] >= 11  # left for the next start


def test_close_tells_the_backfill_to_stop_before_waiting_for_the_jobs(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    seen: list[bool] = []
    shutdown = app.jobs.shutdown

    def watching(wait: bool = True) -> None:
        seen.append(app.embedder._stop.is_set())
        shutdown(wait=wait)

    app.jobs.shutdown = watching
    make_app.close(app)
    assert seen == [True]


class ThreadResult:
    """A call on a thread of its own; `wait` is whether it returned within the deadline."""

    def __init__(self, fn: Any) -> None:
        self.value: Any = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Any) -> None:
        self.value = fn()

    def wait(self) -> bool:
        self._thread.join(DEADLINE_S)
        return not self._thread.is_alive()


def test_near_duplicates_are_found_while_a_new_model_re_embeds(make_app: Any) -> None:
    """add's near-duplicate check compared the new text with the memories that had a vector
    of the new model only: during a change of model's backfill it missed the others (all of
    them, in its first minutes). Until the backfill is done, words compare every memory."""
    embedded_by_fake(make_app)
    app = make_app(model=ready(Twin()), dailylog={"enabled": False})
    rec = app.memories.add("switching models keeps the search up")
    assert [d["id"] for d in rec.near_duplicates] == [1]
    app.embedder.run()  # the twin's backfill done: by meaning again
    rec = app.memories.add("switching the models keeps search up")
    assert rec.near_duplicates  # (#2, the nearer one by the fake's vectors)


# -- a local model (embedding.model_path) swapped at the same path (stop 42, branch res18) ------


class Local(FakeEmbedder):
    """A model_path model as load_embedder names it: the folder and its weights' fingerprint,
    taking over the vectors stored under the folder's name alone (before fingerprints)."""

    def __init__(self, fingerprint: str, salt: str = "") -> None:
        super().__init__(name=f"m@model#{fingerprint}")
        self.identity = replace(self.identity, adopts="m@model/64")
        self.salt = salt  # other weights: other vectors

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed_batch([f"{t} {self.salt}" for t in texts])


def embedded_by(make_app: Any, embedder: FakeEmbedder) -> None:
    first = make_app(model=ready(embedder), dailylog={"enabled": False})
    first.memories.add(TEXT)
    first.embedder.run()
    assert q(first, "switching models", mode="vector")["hits"]
    make_app.close(first)


def models(app: Any) -> list[tuple[str, int]]:
    return app.store.read(lambda con: con.execute("SELECT key, active FROM models").fetchall())


def test_other_weights_at_the_same_model_path_are_embedded_again(make_app: Any) -> None:
    """model.onnx replaced by other weights of the same dimension, the folder's name unchanged:
    the vectors were kept as the new model's (keyed by the folder's name); now the fingerprint
    differs, so the texts are embedded again and search waits for them, as for a change of model."""
    embedded_by(make_app, Local("aaaaaaaaaaaa"))
    new = Local("bbbbbbbbbbbb", salt="other weights")
    app = make_app(model=ready(new), dailylog={"enabled": False})
    assert app.embedder.ensure_model() is not None
    assert app.embedder.counts()["pending"] == 1  # the old weights' vectors are not the new's
    with pytest.raises(Unavailable, match="no vectors of m@model#bbbbbbbbbbbb yet"):
        q(app, "switching models", mode="vector")
    app.embedder.run()
    assert f"{TEXT} other weights" in new.seen
    assert q(app, "switching models", mode="vector")["hits"]
    assert models(app) == [("m@model#bbbbbbbbbbbb/64", 1)]


def test_a_model_paths_vectors_from_before_fingerprints_are_kept(make_app: Any) -> None:
    """An upgrade: the store's vectors are keyed by the folder's name alone; the same folder,
    now named with its fingerprint, takes them over once instead of embedding everything again."""
    embedded_by(make_app, FakeEmbedder(name="m@model"))
    same = Local("cccccccccccc")
    app = make_app(model=ready(same), dailylog={"enabled": False})
    assert app.embedder.counts()["pending"] == 0  # before it registers too (status at start)
    assert app.embedder.ensure_model() is not None
    assert app.embedder.counts()["pending"] == 0
    assert q(app, "switching models", mode="vector")["hits"]
    assert not [t for t in same.seen if TEXT in t]  # queries alone: nothing embedded again
    assert models(app) == [("m@model#cccccccccccc/64", 1)]
