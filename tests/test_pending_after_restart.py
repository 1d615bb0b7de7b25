"""After a restart, with every text embedded, no door calls the texts pending: status, stats and
a search's pending_vectors (which the MCP search tool turns into "N texts not embedded yet:
keyword-only for those"). Before the embed worker had registered its model (the first seconds,
or the whole first scan of a large workspace), they counted every text as pending, while the
model loaded and after it was ready; on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import settle, slow_model, wait_for

from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def _embedded_store(make_app: Any) -> Any:
    app = make_app()
    ws = Path(app.cfg.workspace)
    ws.mkdir(parents=True, exist_ok=True)
    for i in range(5):
        (ws / f"n{i}.md").write_text(f"# Note {i}\n\nThe blue green rollout, part {i}.\n")
    app.indexer.reconcile()
    call(app, "add", content="deploys go out on tuesdays")
    settle(app)
    assert app.embedder.counts()["pending"] == 0
    make_app.close(app)


def test_nothing_is_pending_before_the_worker_registers_its_model(make_app: Any) -> None:
    _embedded_store(make_app)
    app = make_app()  # not started: the worker has not registered the model
    app.model.start()
    assert app.model.wait_ready(10)
    assert app.embedder.model_id is None
    assert app.embedder.counts()["pending"] == 0
    assert call(app, "stats")["pending_vectors"] == 0
    assert call(app, "status")["vectors"]["pending"] == 0

    def pending() -> Any:
        return call(app, "search", query="blue green rollout").get("pending_vectors")

    pending()  # the count is made off the query path, reported from the next search on
    wait_for(lambda: app.searcher._pending_future is None or app.searcher._pending_future.done())
    assert not pending()


def test_nothing_is_pending_while_the_model_loads(make_app: Any) -> None:
    _embedded_store(make_app)
    holder, release = slow_model()
    app = make_app(model=holder)
    holder.start()
    try:
        assert holder.state == "loading"
        assert call(app, "stats")["pending_vectors"] == 0
        assert call(app, "status")["vectors"]["pending"] == 0
    finally:
        release.set()
