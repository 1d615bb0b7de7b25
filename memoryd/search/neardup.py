"""Near-duplicate memories: the hint `add` gives when a new memory says nearly what another in
its namespace says. By vector similarity when the model is ready (the new text's vector is
stored at once, so the embed worker does not embed it a second time), else by word overlap
among keyword matches. Memories (memory/memories.py) calls it through its `near_duplicates`
hook; the App wires it. It lives in search/ because it is one: a knn over the stored vectors
and a keyword query (search.ftsquery), both below the serving edge."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from memoryd.index.embed import ModelHolder
from memoryd.index.embedworker import EmbedWorker
from memoryd.search.ftsquery import parse_query
from memoryd.store import Store, vectors
from memoryd.store import lifecycle as lcstore
from memoryd.store.protocol import VectorIndex
from memoryd.text.markdown import sha256_text

BEST = 10  # the near duplicates named, most alike first


def best(rows: list[tuple[int, str]], sims: dict[str, float], least: float) -> list[dict[str, Any]]:
    """The BEST memories (id, content hash) at least `least` alike by `sims`, most alike
    first, then by id. Chosen in numpy: each memory of the namespace costs the same whether
    it is similar or not, so a burst of near-identical memories (a status line added hundreds
    of times) adds no Python work per similar one (a sort with a key per candidate did)."""
    if not rows:
        return []
    ids = np.fromiter((i for i, _ in rows), dtype=np.int64, count=len(rows))
    score = np.array([sims.get(h, -1.0) for _, h in rows], dtype=np.float64)
    alike = np.flatnonzero(score >= least)
    order = alike[np.lexsort((ids[alike], -score[alike]))[:BEST]]
    return [{"id": int(ids[j]), "similarity": round(float(score[j]), 4)} for j in order]


class NearSettings(Protocol):
    @property
    def near_duplicate_similarity(self) -> float: ...
    @property
    def near_duplicate_overlap(self) -> float: ...


class NearDuplicates:
    def __init__(
        self,
        store: Store,
        model: ModelHolder,
        embedder: EmbedWorker,
        settings: NearSettings,
        *,
        clock: Callable[[], float] = time.time,
        vector_index: VectorIndex | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        # With the searcher's index, the check scores the namespace's memories exactly (their
        # vectors, a few thousand rows at most) instead of a nearest-neighbour scan of every
        # stored vector, chunks included (sqlite-vec's exact scan: ~70 ms at 100K chunks, on
        # every add; issue 23).
        self.vector_index = vector_index

    def __call__(self, text: str, namespace: str) -> list[dict[str, Any]]:
        """[{id, similarity}] of the memories in `namespace` that say nearly `text`."""
        vec_ok = self.store.vec_enabled  # without sqlite-vec there is no knn: use words
        ready = self.model.state == "ready" and self.embedder.ensure_model() is not None
        if vec_ok and ready and self._complete():
            return self._by_vector(text, namespace)
        return self._by_words(text, namespace)

    def _complete(self) -> bool:
        """Whether every text has a vector of the model (its first backfill is done, as this
        daemon's worker saw it: no read of the store): until then (a change of model
        re-embeds everything, for hours at 100K chunks) the memories not embedded yet would
        not be compared at all, and words compare every one."""
        return self.embedder.complete

    def _by_vector(self, text: str, namespace: str) -> list[dict[str, Any]]:
        model_id = self.embedder.model_id
        assert model_id is not None
        vec = self.model.embed_batch([text])[0]
        now = self.clock()
        self.store.run_write(
            lambda con: vectors.store(con, model_id, [(sha256_text(text), vec)], now)
        )
        least = self.settings.near_duplicate_similarity
        index = self.vector_index
        if index is not None:

            def among_memories(con: Any) -> list[dict[str, Any]]:
                rows = lcstore.memory_hashes(con, namespace)
                sims = index.similarities(con, model_id, len(vec), vec, {h for _, h in rows})
                return best(rows, sims, least)

            return self.store.read(among_memories)

        def by_vector(con: Any) -> list[dict[str, Any]]:
            out = []
            for h, dist in vectors.knn(con, model_id, vec, 10):
                if 1 - dist < least:
                    break
                for i in lcstore.memory_ids_by_hash(con, h, namespace):
                    out.append({"id": i, "similarity": round(1 - dist, 4)})
            return out

        return self.store.read(by_vector)

    def _by_words(self, text: str, namespace: str) -> list[dict[str, Any]]:
        parsed = parse_query(text)
        words = set(parsed.terms)
        any_match = parsed.match_any or parsed.match
        if not words or not any_match:
            return []
        least = self.settings.near_duplicate_overlap

        def by_words(con: Any) -> list[dict[str, Any]]:
            out = []
            for i, content in lcstore.keyword_memories(con, any_match, namespace):
                other = set(parse_query(content).terms)
                overlap = len(words & other) / max(1, len(words | other))
                if overlap >= least:
                    out.append({"id": i, "similarity": round(overlap, 4)})
            return out

        return self.store.read(by_words)
