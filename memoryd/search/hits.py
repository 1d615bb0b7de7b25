"""Search results as the API returns them: records of the winning candidates with their
snippets (plain text; FTS5 or ts_headline marks become `highlights` ranges), the note's other
matching sections, secret flags, the `explain` breakdown and, for an all-workspaces search, the
workspace a hit comes from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoryd.search import symbols
from memoryd.search.ranking import SIGNAL_SHARE, Candidate, Scale
from memoryd.search.request import SearchRequest
from memoryd.search.snippets import _CLOSE, _OPEN, plain_snippet, render_snippet
from memoryd.store import entries, searchrows, searchsql


def render(
    con: Any,
    top: list[Candidate],
    req: SearchRequest,
    mode: str,
    scale: Scale,
    fusion: str,
    secret_kinds: Callable[[str, str], list[str]] | None,
) -> list[dict[str, Any]]:
    """The hits for the ranked candidates `top` (already cut to the limit)."""
    # the records, the snippets and the sections' records (PostgreSQL: one round trip)
    more = [sec.id for c in top for sec in c.sections or () if sec.id != c.id]
    by_match = _by_match(top)
    records, snippets, known = searchrows.hit_rows(
        con, [c.id for c in top], by_match, more if req.group == "note" else [], (_OPEN, _CLOSE)
    )
    hits = []
    for c in top:
        rec = records.get(c.id)
        if rec is None:
            continue
        marked = snippets.get(c.id)
        clean = marked is not None and _OPEN not in rec["content"]
        clean = clean and _CLOSE not in rec["content"]
        snippet, ranges = render_snippet(marked) if clean and marked else ("", [])
        hit = {
            **rec,
            "score": round(c.final, 6),
            "snippet": snippet or plain_snippet(rec["content"]),
        }
        if snippet and ranges:
            hit["highlights"] = symbols.widened(ranges, snippet, req.query)
        if req.group == "note" and rec["kind"] == "chunk":
            hit["sections"] = [
                {
                    "id": sec.id,
                    "heading_path": None,
                    "start_line": None,
                    "end_line": None,
                    "score": round(min(1.0, (1 - SIGNAL_SHARE) * sec.fused), 6),
                }
                for sec in c.sections
                if sec.id != c.id
            ]
        if secret_kinds is not None and rec["kind"] == "chunk":
            found = secret_kinds(rec["content_hash"], rec["content"])
            if found:
                hit["secrets"] = found
        if req.explain:
            hit["explain"] = {
                "mode": mode,
                "group": req.group,
                "keyword_rank": c.keyword_rank,
                "bm25": c.bm25,
                "partial": c.partial,
                "vector_rank": c.vector_rank,
                "similarity": c.similarity,
                "coverage": c.coverage,
                "similarity_floor": scale[0],
                "fusion": fusion,
                **{
                    k: round(v, 6)
                    for k, v in c.components.items()
                    if k not in ("updated_at", "keyword", "vector")
                },
                "keyword_part": round(c.components.get("keyword", 0.0), 6),
                "vector_part": round(c.components.get("vector", 0.0), 6),
                "final": round(c.final, 6),
            }
            if c.tail:  # a neighbour under `alone`, after every backed hit (ranking.followers)
                hit["explain"]["tail"] = True
        hits.append(hit)
    fill_sections(con, hits, known)
    if req.workspace == "all":
        foreign = searchsql.foreign_workspaces(con, [h["id"] for h in hits])
        for h in hits:
            if h["id"] in foreign:
                h["workspace"] = foreign[h["id"]]
    return hits


def _by_match(top: list[Candidate]) -> dict[str, list[int]]:
    """The ids of the final hits by the expression that found them: snippets for the final hits
    only (a snippet per match would cost too much at scale)."""
    by_match: dict[str, list[int]] = {}
    for c in top:
        if c.match:
            by_match.setdefault(c.match, []).append(c.id)
    return by_match


def fill_sections(
    con: Any, hits: list[dict[str, Any]], known: dict[int, dict[str, Any]] | None = None
) -> None:
    """Line ranges and headings of the other matching sections of each note (`known`: their
    records, read with the hits' own)."""
    ids = [sec["id"] for h in hits for sec in h.get("sections", ())]
    if not ids:
        return
    records = known if known is not None else entries.get_many(con, ids)
    for h in hits:
        for sec in h.get("sections", ()):
            rec = records.get(sec["id"])
            if rec is not None:
                sec["heading_path"] = rec.get("heading_path")
                sec["start_line"] = rec.get("start_line")
                sec["end_line"] = rec.get("end_line")
        h.get("sections", []).sort(key=lambda sec: -sec["score"])
