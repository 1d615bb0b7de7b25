"""Build the labelled retrieval sets from their hand-written sources, and check every label.

    python bench/data/make_sets.py            # rebuild every set that has a source/ folder
    python bench/data/make_sets.py chat-logs  # one set
    python bench/data/make_sets.py --check    # verify the committed files match their sources

A set's sources are `bench/data/<set>/source/*.txt`, read in name order. Output (BEIR layout,
extended with line-level evidence):

- `corpus/<path>.md`: one markdown note per `=== ` section;
- `queries.jsonl`: `{"_id", "text", "type", "no_answer", "facts", "answer"}`;
- `qrels/test.tsv`: `query-id, corpus-id, score, lines` (corpus-id = the note's path under
  corpus/, lines = comma-separated 1-based line numbers of the evidence in that note). BEIR
  readers that take three columns ignore the fourth.

Source syntax (one construct per line):

    %% a comment
    === chat 2026-01-10 | Maya, Tom      a chat session: front matter + heading are generated,
                                         the note is corpus/<date>-<maya>-<tom>.md
    === note ops/runbooks/db-failover.md  a note written verbatim (front matter included)
    ... note text ...  @@fact-id:key     marks the line as evidence for fact-id; the line must
                                         contain `key` (case-insensitive). Several marks allowed.
    ? TYPE fact-id,fact-id | question    a query (not part of the note). TYPE is one of
                                         single, temporal, multi, para, ident, cjk, none.
    ? TYPE * | word                      evidence = every body line (outside front matter) of
                                         every note that contains `word` (for bare-word queries
                                         whose word occurs in several notes).

Checks: every mark's key is in its line; every query's facts exist; `multi` evidence spans at
least two notes; `none` has no facts; `para` shares no content word (after crude stemming)
with its evidence lines; query texts are unique; at least 15% of queries are `none`.
Deterministic: the same sources always give byte-identical files.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
TYPES = ("single", "temporal", "multi", "para", "ident", "cjk", "none")
_MARK = re.compile(r"\s*@@([\w.-]+):([^@]+?)(?=\s*@@|\s*$)")
_QUERY = re.compile(r"^\?\s+(\w+)\s*([\w.,*-]*)\s*\|\s*(.+?)\s*$")

STOP = set(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours yourself yourselves ever also get got yet still
    s t don didn doesn isn wasn won let lets ok okay oh yeah yes hey hi like one really just
    thing things""".split()  # noqa: SIM905 (a word list reads better as prose)
)


def stem(word: str) -> str:
    """Crude English stem: strip a common suffix, keep at most 5 characters (errs towards
    calling two words the same, which is what the paraphrase check wants)."""
    w = word.lower().removesuffix("'s")
    for suffix in ("ies", "ing", "ed", "es", "ly", "er", "s", "e"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    return w[:5]


def content_stems(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9][a-z0-9']*", text.lower())
    return {stem(w) for w in words if w not in STOP and w.removesuffix("'s") not in STOP}


@dataclass
class Note:
    path: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Query:
    type: str
    facts: list[str]
    text: str
    where: str


def body_start(lines: list[str]) -> int:
    """Index of the first line after the front matter (0 when there is none)."""
    if lines and lines[0].strip() == "---":
        for n in range(1, len(lines)):
            if lines[n].strip() == "---":
                return n + 1
    return 0


def chat_header(spec: str) -> tuple[str, list[str]]:
    day, who = (s.strip() for s in spec.split("|", 1))
    people = [p.strip() for p in who.split(",")]
    d = date.fromisoformat(day)
    slug = "-".join(p.lower() for p in people)
    names = ", ".join(people[:-1]) + f" and {people[-1]}"
    head = [
        "---",
        f"date: {day}",
        f"participants: [{', '.join(people)}]",
        "tags: [chat]",
        "---",
        f"# Chat with {names}, {d.strftime('%A')} {d.day} {d.strftime('%B %Y')}",
        "",
    ]
    return f"{day}-{slug}.md", head


def parse(sources: list[Path]) -> tuple[list[Note], dict[str, tuple[str, int, str]], list[Query]]:
    notes: list[Note] = []
    facts: dict[str, tuple[str, int, str]] = {}  # id -> (path, line, key)
    queries: list[Query] = []
    errors: list[str] = []
    for src in sources:
        for n, raw in enumerate(src.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{src.name}:{n}"
            if raw.startswith("%%"):
                continue
            if raw.startswith("=== "):
                kind, _, spec = raw[4:].partition(" ")
                if kind == "chat":
                    path, head = chat_header(spec)
                    while any(x.path == path for x in notes):
                        path = path.removesuffix(".md") + "-b.md"
                    notes.append(Note(path, head))
                elif kind == "note":
                    notes.append(Note(spec.strip()))
                else:
                    errors.append(f"{where}: unknown section kind {kind!r}")
                continue
            if raw.startswith("? "):
                m = _QUERY.match(raw)
                if not m or m.group(1) not in TYPES:
                    errors.append(f"{where}: bad query line")
                    continue
                ids = [i for i in m.group(2).split(",") if i]
                queries.append(Query(m.group(1), ids, m.group(3), where))
                continue
            if not notes:
                if raw.strip():
                    errors.append(f"{where}: text before the first === section")
                continue
            note = notes[-1]
            marks = _MARK.findall(raw)
            text = _MARK.sub("", raw).rstrip() if marks else raw.rstrip()
            note.lines.append(text)
            for fid, key in marks:
                if fid in facts:
                    errors.append(f"{where}: fact {fid!r} marked twice")
                if key.strip().lower() not in text.lower():
                    errors.append(f"{where}: fact {fid!r}: key {key!r} not in the line")
                facts[fid] = (note.path, len(note.lines), key.strip())
    for note in notes:
        while note.lines and not note.lines[-1].strip():
            note.lines.pop()
    for i, q in enumerate(queries):
        if q.facts == ["*"]:
            q.facts = []
            for note in notes:
                for n in range(body_start(note.lines), len(note.lines)):
                    if q.text.lower() in note.lines[n].lower():
                        fid = f"*{i}:{note.path}:{n + 1}"
                        facts[fid] = (note.path, n + 1, q.text)
                        q.facts.append(fid)
            if not q.facts:
                errors.append(f"{q.where}: {q.text!r} occurs in no note")
    if errors:
        raise SystemExit("\n".join(errors))
    return notes, facts, queries


def check(facts: dict[str, tuple[str, int, str]], queries: list[Query], notes: list[Note]) -> None:
    errors: list[str] = []
    by_path = {n.path: n for n in notes}
    seen: set[str] = set()
    for q in queries:
        low = q.text.lower()
        if low in seen:
            errors.append(f"{q.where}: duplicate query {q.text!r}")
        seen.add(low)
        missing = [f for f in q.facts if f not in facts]
        if missing:
            errors.append(f"{q.where}: unknown facts {missing}")
            continue
        if q.type == "none":
            if q.facts:
                errors.append(f"{q.where}: a no-answer query names facts")
            continue
        if not q.facts:
            errors.append(f"{q.where}: an answerable query without facts")
        paths = {facts[f][0] for f in q.facts}
        if q.type == "multi" and len(paths) < 2:
            errors.append(f"{q.where}: multi-hop evidence in one note only")
        if q.type == "para":
            evidence = " ".join(by_path[facts[f][0]].lines[facts[f][1] - 1] for f in q.facts)
            shared = content_stems(q.text) & content_stems(evidence)
            if shared:
                errors.append(f"{q.where}: paraphrase shares {sorted(shared)} with its evidence")
    n_none = sum(q.type == "none" for q in queries)
    if queries and n_none / len(queries) < 0.15:
        errors.append(f"only {n_none}/{len(queries)} no-answer queries (need >= 15%)")
    if errors:
        raise SystemExit("\n".join(errors))


def render(name: str) -> dict[str, str]:
    """The set's files (relative path -> text), built from its sources and checked."""
    folder = HERE / name
    notes, facts, queries = parse(sorted((folder / "source").glob("*.txt")))
    check(facts, queries, notes)
    out: dict[str, str] = {}
    for note in notes:
        out[f"corpus/{note.path}"] = "\n".join(note.lines) + "\n"
    qlines, qrels = [], ["query-id\tcorpus-id\tscore\tlines"]
    for i, q in enumerate(queries, 1):
        qid = f"q{i:04d}"
        answer = [facts[f][2] for f in q.facts]
        qlines.append(
            json.dumps(
                {
                    "_id": qid,
                    "text": q.text,
                    "type": q.type,
                    "no_answer": q.type == "none",
                    "facts": q.facts,
                    "answer": answer,
                },
                ensure_ascii=False,
            )
        )
        per_path: dict[str, list[int]] = {}
        for f in q.facts:
            path, line, _ = facts[f]
            per_path.setdefault(path, []).append(line)
        for path, lines in per_path.items():
            qrels.append(f"{qid}\t{path}\t2\t{','.join(map(str, sorted(set(lines))))}")
    out["queries.jsonl"] = "\n".join(qlines) + "\n"
    out["qrels/test.tsv"] = "\n".join(qrels) + "\n"
    return out


def sets_with_sources() -> list[str]:
    return sorted(p.parent.name for p in HERE.glob("*/source"))


def main(argv: list[str]) -> int:
    check_only = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or sets_with_sources()
    stale = []
    for name in names:
        files = render(name)
        folder = HERE / name
        if check_only:
            on_disk = {
                str(p.relative_to(folder)): p.read_text(encoding="utf-8")
                for p in (folder / "corpus").rglob("*.md")
            }
            for rel in ("queries.jsonl", "qrels/test.tsv"):
                p = folder / rel
                on_disk[rel] = p.read_text(encoding="utf-8") if p.exists() else ""
            if on_disk != files:
                stale.append(name)
            continue
        for p in (folder / "corpus").rglob("*.md") if (folder / "corpus").exists() else []:
            p.unlink()
        for rel, text in files.items():
            p = folder / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        nq = files["queries.jsonl"].count("\n")
        print(f"{name}: {sum(r.startswith('corpus/') for r in files)} notes, {nq} queries")
    if stale:
        print(f"out of date with their sources: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
