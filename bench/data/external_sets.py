"""Build the two labelled sets written by people outside memoryd from their public sources.

    python bench/data/external_sets.py go-faq   SRC   # SRC: a checkout of golang/website
    python bench/data/external_sets.py irc-chat SRC   # SRC: a checkout of HIT-SCIR/Molweni

Deterministic and offline: it reads the source checkout named on the command line (the commits
are in bench/data/README.md) and writes the set in the BEIR-with-lines layout beside this file.
The converted sets are committed; nothing here runs at test time.

go-faq (technical Q&A): every question of the Go FAQ (`_content/doc/faq.md`) and the question
headings of the PGO and coverage guides is a query; its answer, without the question, is one
note (`faq/NNN.md`, every text line is evidence). The other guides under `_content/doc` (not the
release notes), split at `##` headings, are unlabelled notes beside them (`docs/...`).

irc-chat (conversation): Molweni's machine-reading test dialogues (Ubuntu IRC chats, questions
written by its annotators) are one note each (`chats/tNNN.md`, one utterance per line); up to
three answerable questions per dialogue with distinct answers are the queries, the utterance
holding the annotated answer span is the evidence line. The discourse-parsing dev and test
dialogues that share no utterance with those are unlabelled notes beside them
(`chats/dNNNN.md`). Unanswerable questions are left out: they are unanswerable in their own
dialogue only, not in the whole set.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
QUESTION = re.compile(r"^(#{2,4}) (.*\?)(?: \{#[^}]*\})?\s*$")
HEADING = re.compile(r"^(#{1,4}) (.*?)(?: \{#[^}]*\})?\s*$")
GUIDE_BYTES = 400_000  # unlabelled Go guides kept beside the FAQ (keeps indexing short)


def _write(name: str, notes: dict[str, str], queries: list[dict], qrels: list[tuple]) -> None:
    write_set(HERE / name, notes, queries, qrels)
    print(f"{name}: {len(notes)} notes, {len(queries)} queries")


def write_set(out: Path, notes: dict[str, str], queries: list[dict], qrels: list[tuple]) -> None:
    """A set folder in bench's layout (also bench/heldout.py's, outside the repository)."""
    shutil.rmtree(out / "corpus", ignore_errors=True)
    for rel, text in notes.items():
        p = out / "corpus" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "queries.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8"
    )
    rows = ["query-id\tcorpus-id\tscore\tlines"]
    rows += [f"{q}\t{p}\t{s}\t{','.join(map(str, lines))}" for q, p, s, lines in qrels]
    (out / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end >= 0:
            return text[end + 5 :]
    return text


def _sections(text: str) -> list[tuple[str, str, list[str]]]:
    """(level marks, heading, body lines) per heading of a markdown page."""
    out: list[tuple[str, str, list[str]]] = [("", "", [])]
    fence = False
    for line in _strip_front_matter(text).splitlines():
        if line.startswith("```"):
            fence = not fence
        m = None if fence else HEADING.match(line)
        if m:
            out.append((m.group(1), m.group(2).strip(), []))
        else:
            out[-1][2].append(line)
    return out


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def go_faq(src: Path) -> None:
    doc = src / "_content" / "doc"
    notes: dict[str, str] = {}
    queries: list[dict] = []
    qrels: list[tuple] = []
    labelled = ("faq.md", "pgo.md", "build-cover.md")
    for page in labelled:
        for marks, heading, body in _sections((doc / page).read_text(encoding="utf-8")):
            lines = _trim(body)
            if not QUESTION.match(f"{marks} {heading}") or not any(x.strip() for x in lines):
                continue
            n = len(queries) + 1
            rel = f"faq/{n:03d}.md"
            notes[rel] = "\n".join(lines) + "\n"
            evidence = [i for i, x in enumerate(lines, 1) if x.strip()]
            first = lines[evidence[0] - 1].strip()
            queries.append(
                {
                    "_id": f"g{n:03d}",
                    "text": heading,
                    "type": "faq",
                    "no_answer": False,
                    "facts": [],
                    "answer": [first[:30]],
                }
            )
            qrels.append((f"g{n:03d}", rel, 2, evidence))
    size = 0
    guides = sorted(p for p in doc.rglob("*.md") if p.name not in (*labelled, "go_faq.md"))
    for page in guides:
        if re.fullmatch(r"go1(\.\d+)?\.md", page.name):
            continue  # release notes: long lists of changes, not guides
        text = page.read_text(encoding="utf-8")
        if size + len(text) > GUIDE_BYTES:
            continue
        size += len(text)
        stem = page.relative_to(doc).with_suffix("").as_posix().replace("/", "-")
        for i, (_marks, heading, body) in enumerate(_sections(text)):
            lines = _trim(body)
            if sum(len(x) for x in lines) < 80:
                continue
            title = f"# {heading}\n\n" if heading else ""
            notes[f"docs/{stem}-{i:02d}.md"] = title + "\n".join(lines) + "\n"
    _write("go-faq", notes, queries, qrels)


def _utterance_of(edus: list[dict], context: str, start: int, answer: str) -> int | None:
    """The 1-based utterance whose text holds the answer span at `start` in Molweni's
    context string ("speaker: text speaker: text ...", lower-cased speakers)."""
    pos, context = 0, context.lower()
    for i, e in enumerate(edus, 1):
        head = f"{e['speaker'].lower()}: "
        at = context.find(head + e["text"].lower(), pos)
        if at < 0:
            return None
        begin, end = at + len(head), at + len(head) + len(e["text"])
        if begin <= start < end:
            return i if answer.lower() in e["text"].lower() else None
        pos = end
    return None


def _chat(title: str, edus: list[dict]) -> tuple[str, int]:
    head = f"# {title}\n\n"
    body = "".join(f"{e['speaker']}: {e['text']}\n" for e in edus)
    return head + body, head.count("\n")


def irc_chat(src: Path) -> None:
    mrc = json.loads((src / "MRC(withDiscourse)" / "test.json").read_text(encoding="utf-8"))
    notes: dict[str, str] = {}
    queries: list[dict] = []
    qrels: list[tuple] = []
    seen: set[str] = set()
    for d, dia in enumerate(mrc["data"]["dialogues"], 1):
        rel = f"chats/t{d:03d}.md"
        text, offset = _chat(f"#ubuntu chat {d}", dia["edus"])
        notes[rel] = text
        seen.update(e["text"] for e in dia["edus"])
        answers: set[str] = set()
        picked = 0
        for qa in sorted(dia["qas"], key=lambda q: (-len(q["question"].split()), q["id"])):
            if qa["is_impossible"] or not qa["answers"] or picked == 3:
                continue
            a = qa["answers"][0]
            line = _utterance_of(dia["edus"], dia["context"], a["answer_start"], a["text"])
            key = a["text"].lower().strip()
            if line is None or key in answers or len(qa["question"].split()) < 4:
                continue
            answers.add(key)
            picked += 1
            qid = f"m{len(queries) + 1:04d}"
            question = " ".join(qa["question"].split())
            queries.append(
                {
                    "_id": qid,
                    "text": question,
                    "type": "chat",
                    "no_answer": False,
                    "facts": [],
                    "answer": [a["text"]],
                }
            )
            qrels.append((qid, rel, 2, [offset + line]))
    n = 0
    for part in ("dev", "test"):
        for dia in json.loads((src / "DP" / f"{part}.json").read_text(encoding="utf-8")):
            if any(e["text"] in seen for e in dia["edus"]):
                continue
            n += 1
            notes[f"chats/d{n:04d}.md"] = _chat(f"#ubuntu chat d{n}", dia["edus"])[0]
            if n == 400:
                break
        if n == 400:
            break
    _write("irc-chat", notes, queries, qrels)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("go-faq", "irc-chat"):
        print(__doc__)
        return 2
    (go_faq if argv[0] == "go-faq" else irc_chat)(Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
