"""`python -m bench quality`: the metrics on hand-computed rankings, the labels of every set,
and a tiny end-to-end run with the fake embedder."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from bench import quality
from bench.quality import hit_spans, line_metrics, load_set, metrics, score_query, summarise

DATA = Path(quality.__file__).parent / "data"


def test_document_metrics_on_a_known_ranking() -> None:
    # gains 2^rel - 1: b=0, a=3, c=1; ideal order a, c
    ndcg, recall, mrr = metrics(["b", "a", "c"], {"a": 2, "c": 1})
    dcg = 3 / math.log2(3) + 1 / math.log2(4)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert ndcg == pytest.approx(dcg / idcg) == pytest.approx(0.65900, abs=1e-5)
    assert recall == 1.0 and mrr == 0.5
    assert metrics(["x", "y"], {"a": 2}) == (0.0, 0.0, 0.0)
    # only the top 10 count
    assert metrics([str(i) for i in range(10)] + ["a"], {"a": 2}) == (0.0, 0.0, 0.0)


def test_line_metrics_count_a_unit_once_and_need_a_covering_span() -> None:
    units = [("a.md", frozenset({5})), ("b.md", frozenset({10, 11}))]
    hits = [
        [("a.md", 1, 4)],  # same note, but not the evidence line
        [("b.md", 9, 10)],  # covers b
        [("b.md", 11, 12)],  # b again: no second gain
        [("a.md", 5, 8)],  # covers a
    ]
    ndcg, recall, mrr = line_metrics(hits, units)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3)
    assert ndcg == pytest.approx(dcg / idcg) == pytest.approx(0.65092, abs=1e-5)
    assert recall == 1.0 and mrr == 0.5
    assert line_metrics([[("a.md", 1, 4)]], units) == (0.0, 0.0, 0.0)
    assert line_metrics([[("a.md", 5, 5), ("b.md", 10, 10)]], units)[0] == 1.0  # capped at 1


def test_hit_spans_read_both_hit_shapes() -> None:
    chunk = {"path": "n.md", "start_line": 3, "end_line": 9}
    note = {
        "path": "n.md",
        "start_line": 3,
        "end_line": 9,
        "sections": [{"heading_path": "A > B", "start_line": 20, "end_line": 24, "score": 0.4}],
    }
    memory = {"id": 7, "content": "a memory", "path": None}
    assert hit_spans(chunk) == [("n.md", 3, 9)]
    assert hit_spans(note) == [("n.md", 3, 9), ("n.md", 20, 24)]
    assert hit_spans(memory) == []


def test_summary_reports_no_answer_precision_and_empty_answerable() -> None:
    ds = quality.Dataset(
        "t",
        {"a.md": "# A\n\nfact one\nfact two\n"},
        {
            "q1": quality.Query("q1", "one", "single"),
            "q2": quality.Query("q2", "two", "para"),
            "q3": quality.Query("q3", "zebrafish", "none", True),
            "q4": quality.Query("q4", "okapi", "none", True),
        },
        {"q1": {"a.md": (2, (3,))}, "q2": {"a.md": (2, (4,))}},
    )
    hit3 = {"path": "a.md", "start_line": 3, "end_line": 3}
    s = summarise(ds, {"q1": [hit3], "q2": [], "q3": [], "q4": [hit3]})
    assert s["recall@10"] == 0.5 and s["mrr@10"] == 0.5
    assert s["doc_recall@10"] == 0.5  # q1 found its note, q2 found nothing
    assert s["no_answer_empty"] == 0.5 and s["answerable_empty"] == 0.5
    assert s["recall@10_by_type"] == {"para": 0.0, "single": 1.0}
    assert score_query(ds, "q3", []) is None
    # a hit on the right note but the wrong line: document-level yes, line-level no
    assert score_query(ds, "q2", [hit3])["recall@10"] == 0.0
    assert score_query(ds, "q2", [hit3])["doc_recall@10"] == 1.0


@pytest.mark.parametrize("name", quality.SETS)
def test_every_label_of_every_set_is_valid(name: str) -> None:
    ds = load_set(DATA / name)
    assert quality.check_labels(ds) == []
    answerable = [q for q in ds.queries.values() if not q.no_answer]
    no_answer = [q for q in ds.queries.values() if q.no_answer]
    # sets written by others carry no no-answer labels (bench/data/README.md)
    assert len(no_answer) >= 0.15 * len(ds.queries) or name in ("notes-qa", *quality.EXTERNAL)
    if name == "notes-qa":
        return
    # each answer string is in one of its query's evidence lines
    raw = {
        json.loads(line)["_id"]: json.loads(line)
        for line in (DATA / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    }
    for q in answerable:
        evidence = [
            ds.notes[path].splitlines()[n - 1].lower()
            for path, (_, lines) in ds.qrels[q.id].items()
            for n in lines
        ]
        for answer in raw[q.id]["answer"]:
            assert any(answer.lower() in line for line in evidence), (q.id, answer)


def test_sets_match_their_sources() -> None:
    """The committed notes, queries and qrels are what make_sets.py builds from the sources
    (whose own checks: fact keys in their lines, paraphrases sharing no content word, ...)."""
    spec = importlib.util.spec_from_file_location("make_sets", DATA / "make_sets.py")
    assert spec is not None and spec.loader is not None
    make_sets = importlib.util.module_from_spec(spec)
    sys.modules["make_sets"] = make_sets  # dataclasses look their module up while defining
    try:
        spec.loader.exec_module(make_sets)
    finally:
        del sys.modules["make_sets"]
    assert make_sets.main(["--check"]) == 0


def test_quality_command_on_a_subset_with_the_fake_embedder(tmp_path: Path) -> None:
    def run() -> dict:
        out = io.StringIO()
        with redirect_stdout(out):
            args = ["--fake", "--json", "--queries", "12", "--set", "chat-logs", "--set", "cjk"]
            args.append("--per-query")
            code = quality.main(
                [*args, "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]
            )
        assert code == 0
        return json.loads(out.getvalue())

    first = run()
    saved = list((tmp_path / "out").glob("quality-*.json"))
    assert saved and json.loads(saved[0].read_text())["sets"] == first["sets"]
    assert set(first["sets"]) == {"chat-logs", "cjk"}
    for res in first["sets"].values():
        assert set(res["modes"]) == {"keyword", "vector", "hybrid", "auto"}
        for s in res["modes"].values():
            assert s["answerable"] + s["no_answer"] == 12 and s["no_answer"] >= 1
            for key in ("ndcg@10", "recall@10", "mrr@10", "no_answer_empty"):
                assert 0.0 <= s[key] <= 1.0
    assert first["sets"]["chat-logs"]["modes"]["keyword"]["recall@10"] > 0.3
    per_query = first["sets"]["cjk"]["modes"]["keyword"]["per_query"]
    assert len(per_query) == 12 and all("hits" in v and "top" in v for v in per_query.values())
    indexes = [p for p in (tmp_path / "cache").iterdir() if p.name != "baselines"]
    assert len(indexes) == 2
    assert len(list((tmp_path / "cache" / "baselines").iterdir())) == 2  # whole-note vectors
    for res in first["sets"].values():  # the three plain baselines, scored like the modes
        assert set(res["baselines"]) == {"bm25", "cosine", "rrf"}
        for s in res["baselines"].values():
            assert 0.0 <= s["ndcg@10"] <= 1.0 and 0.0 <= s["recall@10"] <= 1.0
    assert first["sets"]["chat-logs"]["baselines"]["bm25"]["recall@10"] > 0.3
    second = run()  # from the cached indexes: the same figures
    for name, res in first["sets"].items():
        for mode, s in res["modes"].items():
            again = second["sets"][name]["modes"][mode]
            assert {k: v for k, v in s.items() if k != "seconds"} == {
                k: v for k, v in again.items() if k != "seconds"
            }
        assert res["baselines"] == second["sets"][name]["baselines"]
    assert second["sets"]["chat-logs"]["index_seconds"] == 0.0


def test_sets_written_by_others_name_their_source_commit_and_licence() -> None:
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for name in quality.EXTERNAL:
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}` | github"))
        assert re.search(r"\b[0-9a-f]{40}\b", row), name
        assert re.search(r"BSD|Apache|CC BY|CC0|MIT", row) and "NC" not in row, name
        assert (DATA / "external_sets.py").read_text().count(f'"{name}"') >= 1


def test_plain_baselines_on_a_tiny_set() -> None:
    from bench import baselines

    ds = quality.Dataset(
        "tiny",
        {
            "a.md": "# Deploy\n\nWe deploy on Fridays.\n",
            "b.md": "# Cats\n\n猫和狗\n",
            "c.md": "x\n",
        },
        {"q1": quality.Query("q1", "when do we deploy"), "q2": quality.Query("q2", "猫狗")},
        {"q1": {"a.md": (1, (3,))}, "q2": {"b.md": (1, (3,))}},
    )
    ranked = baselines.bm25_rankings(ds)
    assert ranked["q1"] == ["a.md"]
    assert ranked["q2"] == []  # a CJK word is a phrase of its bigrams: 猫狗 is not in 猫和狗
    assert baselines.rrf(["a", "b"], ["b", "c"]) == ["b", "a", "c"]
    assert baselines.rrf(["x"], ["y"]) == ["x", "y"]  # a tie goes by name


def test_answerability_typed_check_and_leave_one_set_out() -> None:
    from bench.answerability import SETS, loso, typed_flag

    def row(text: str, *lines: str) -> dict:
        return {
            "text": text,
            "hits": [{}],
            "lines": [(1.0 - i / 10, ln) for i, ln in enumerate(lines)],
        }

    # a question asking for an amount needs one on the lines most like it
    assert typed_flag(row("How much was the deposit?", "We viewed the flat.", "It had mould."), 2)
    assert not typed_flag(row("How much was the rent?", "Rent is £1,450 a month."), 2)
    assert not typed_flag(row("Who viewed the flat?", "We viewed the flat."), 2)  # untyped
    # chosen on the other three sets: the largest no-answer share within the Recall budget
    table = {
        "strict": {n: {"drop": 0.0, "empty": 0.1} for n in SETS},
        "greedy": {n: {"drop": 0.02 if n == "notes-qa" else 0.0, "empty": 0.5} for n in SETS},
    }
    picked = {held: v["chosen"] for held, v in loso(table).items()}
    assert picked == {
        "chat-logs": "strict",
        "tech-notes": "strict",
        "cjk": "strict",
        "notes-qa": "greedy",
    }


def test_crossset_cut_is_chosen_leaving_the_set_out() -> None:
    from bench import crossset

    # two sets: on "a" a cut above 0.3 costs recall; "b" tolerates any cut
    table = {
        "a": {c: {"recall@10": 1.0 if c <= 0.3 else 0.5, "cross_empty": c} for c in crossset.CUTS},
        "b": {c: {"recall@10": 0.8, "cross_empty": min(1.0, 2 * c)} for c in crossset.CUTS},
    }
    held = crossset.loso(table)
    assert held["b"]["cut"] == 0.3 and held["b"]["cross_empty"] == 0.6  # chosen on "a"
    assert held["a"]["cut"] == max(crossset.CUTS)  # "b" allows any cut: "a" pays for it
    assert held["a"]["drop"] == 0.5


def test_weights_are_chosen_leaving_the_set_out() -> None:
    from bench import weights

    d, other = weights.key(weights.DEFAULT), weights.key(weights.COMBOS[1])
    rest = {weights.key(c): [0.0, 0.0] for c in weights.COMBOS}
    table = {
        "a": {**rest, d: [0.9, 0.9], other: [0.5, 0.5]},
        "b": {**rest, d: [0.9, 0.9], other: [0.5, 0.5]},
        "c": {**rest, d: [0.2, 0.2], other: [0.8, 0.8]},  # prefers the other, outvoted
    }
    held = weights.loso(table)
    assert held["c"]["chosen"] == d and held["c"]["held_out"] == [0.2, 0.2]
    assert held["c"]["own_best"] == [other, [0.8, 0.8]]
    assert held["a"]["chosen"] == other  # chosen on b and c: (0.9 + 0.2) / 2 < (0.5 + 0.8) / 2


def test_a_floor_keeps_a_share_that_hurts_another_set_from_being_chosen() -> None:
    from bench import weights

    table = {
        "a": {"0.2": [0.6, 0.8], "0.0": [0.5, 0.8], "0.5": [0.9, 0.8]},
        "b": {"0.2": [0.6, 0.8], "0.0": [0.6, 0.8], "0.5": [0.59, 0.8]},  # falls at 0.5
        "c": {"0.2": [0.7, 0.9], "0.0": [0.7, 0.9], "0.5": [0.7, 0.9]},
    }
    assert weights.loso(table)["c"]["chosen"] == "0.5"  # the best mean of a and b
    held = weights.loso(table, "0.0")
    assert held["c"]["chosen"] == "0.2" and held["a"]["chosen"] == "0.2"
    assert held["b"]["chosen"] == "0.5"  # chosen on a and c, where nothing falls


def test_a_held_out_conversation_set_is_written_outside_and_run_with_extra(
    tmp_path: Path,
) -> None:
    """bench/heldout.py turns LoCoMo's shape (sessions of turns, questions naming their
    evidence turns) into a set folder outside the repository, and `--extra` runs it alone."""
    from bench import heldout

    def turn(i: str, who: str, text: str, **more: str) -> dict:
        return {"dia_id": i, "speaker": who, "text": text, **more}

    talk = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            turn("D1:1", "Ana", "I adopted a   greyhound called Pixel."),
            turn("D1:2", "Ben", "Lovely!", blip_caption="a dog on a sofa"),
        ],
        "session_2_date_time": "9:00 am on 9 June, 2023",
        "session_2": [turn("D2:1", "Ben", "My sister moved to Lisbon in spring.")],
    }

    def ask(question: str, evidence: str, category: int) -> dict:
        return {"question": question, "answer": "-", "evidence": [evidence], "category": category}

    qa = [
        ask("What is Ana's dog called?", "D1:1", 1),
        ask("Where does Ben's sister live?", "D2:1; D1:2", 4),
        ask("What is Ben's cat called?", "D1:2", 5),
        ask("Unknown turn?", "D9:9", 2),
    ]
    src = tmp_path / "locomo10.json"
    src.write_text(json.dumps([{"sample_id": "conv-1", "conversation": talk, "qa": qa}]))
    out = tmp_path / "locomo"
    assert heldout.main(["locomo", str(src), str(out)]) == 0
    assert heldout.main(["locomo", str(src), str(Path(quality.ROOT) / "x")]) == 2  # not inside
    ds = quality.load_set(out)
    assert quality.check_labels(ds) == []
    note = (out / "corpus" / "conv-1" / "session_01.md").read_text()
    assert note.splitlines() == [
        "# Chat with Ana and Ben, 1:56 pm on 8 May, 2023",
        "",
        "Ana: I adopted a greyhound called Pixel.",
        "Ben: Lovely! [shares a photo: a dog on a sofa]",
    ]
    rows = (out / "qrels" / "test.tsv").read_text().splitlines()[1:]
    assert rows == [
        "conv-1-000\tconv-1/session_01.md\t2\t3",
        "conv-1-001\tconv-1/session_02.md\t2\t3",
        "conv-1-001\tconv-1/session_01.md\t2\t4",
    ]  # category 5 and evidence naming no turn left out
    report = io.StringIO()
    with redirect_stdout(report):
        args = ["--fake", "--json", "--modes", "keyword", "--extra", str(out)]
        code = quality.main([*args, "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o")])
    assert code == 0
    got = json.loads(report.getvalue())["sets"]
    assert list(got) == ["locomo"] and got["locomo"]["modes"]["keyword"]["answerable"] == 2
    assert got["locomo"]["modes"]["keyword"]["recall@10"] > 0


def test_a_titles_set_asks_each_unshared_file_name(tmp_path: Path) -> None:
    from bench import heldout

    vault = tmp_path / "vault"
    for rel in ("Create a vault.md", "a/Aliases.md", "b/aliases.md", ".obsidian/x.md", "Sync.md"):
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(f"Text of {rel}.\n")
    out = tmp_path / "titles"
    assert heldout.main(["titles", str(vault), str(out)]) == 0
    ds = quality.load_set(out)
    assert sorted(ds.notes) == ["Create a vault.md", "Sync.md", "a/Aliases.md", "b/aliases.md"]
    asked = {q.text: list(ds.qrels[qid]) for qid, q in ds.queries.items()}
    assert asked == {"Create a vault": ["Create a vault.md"], "Sync": ["Sync.md"]}
    assert not ds.line_level and quality.check_labels(ds) == []
