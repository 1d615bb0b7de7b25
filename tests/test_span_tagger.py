"""The span tagger measured for issue 20.1 and not shipped (bench/span_tagger.py, trained by
bench/train_spans.py): training is deterministic and learns a span, the tagger goes in place of
the rules' names and out again without a trace, and the trainer sees what the tagger would. Pure."""

from __future__ import annotations

from bench import span_tagger, train_spans
from bench.span_tagger import TAGS, Tagger
from memoryd.text.entities import extract


def _lines() -> list[train_spans.Line]:
    b, i = TAGS.index("B-person"), TAGS.index("I-person")
    s = TAGS.index("B-system")
    return [
        (["Ada", "Lovelace", "wrote", "it", "."], [b, i, 0, 0, 0], None),
        (["We", "met", "Grace", "Hopper", "."], [0, 0, b, i, 0], None),
        (["We", "run", "Kafka", "."], [0, 0, s, 0], None),
    ] * 4


def test_training_is_deterministic_and_learns_the_spans() -> None:
    one = train_spans.train(_lines(), epochs=4, min_count=1)
    assert one == train_spans.train(_lines(), epochs=4, min_count=1)
    tagger = span_tagger.loads(span_tagger.dumps(one))
    line = "We met Grace Hopper ."
    assert [(line[a:b], kind) for a, b, kind, _ in tagger.spans(line)] == [
        ("Grace Hopper", "person")
    ]


def test_the_tagger_goes_in_place_of_the_rules_names_and_out_again() -> None:
    text = "Caroline Baker moved the billing-svc to Lisbon.\n"
    before = extract(text)
    span_tagger.install(Tagger({}))  # no weights: every word O, so no capitalised name
    try:
        keys = {m.key for m in extract(text)}
    finally:
        span_tagger.install(None)
    assert "billing-svc" in keys and "caroline baker" not in keys  # explicit ones stay
    assert extract(text) == before


def test_the_trainer_sees_the_lines_and_names_the_tagger_is_shown() -> None:
    seen = train_spans.rule_names("Ping `compute_fx()` for Caroline Baker.\nall lower case\n")
    assert list(seen) == [1]  # a line with no capital letter is not read
    line, names = seen[1]
    assert "compute_fx" not in line  # code is blanked
    assert [line[a:b] for a, b, _ in names] == ["Caroline Baker"]
