"""A search while the embedding model is still loading says that it used keywords only."""

from __future__ import annotations

from typing import Any

from conftest import q, slow_model

from memoryd.agents.tools import fmt_hits
from memoryd.ctl.output import pending_note


def test_a_search_before_the_model_is_ready_says_it_used_keywords_only(make_app: Any) -> None:
    holder, release = slow_model()
    app = make_app(model=holder)
    app.memories.add("the deploy runbook lives in ops/deploy.md")
    holder.start()
    try:
        res = q(app, "deploy runbook")
        assert res["mode"] == "keyword" and res["hits"]
        assert res["model_state"] == "loading"
        assert "embedding model is loading" in (pending_note(res) or "")
        assert "keyword-only: the embedding model is loading" in fmt_hits(res)
        assert "model_state" not in q(app, "deploy runbook", mode="keyword")
    finally:
        release.set()
    assert holder.wait_ready(10)
    assert "model_state" not in q(app, "deploy runbook")
