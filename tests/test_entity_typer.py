"""The learned span typer (memoryd/text/entity_typer.py): the shipped weights load, the same text
gives the same types, a few names the rules alone mistype, and what it must leave alone. Pure."""

from __future__ import annotations

import importlib.resources
from collections.abc import Iterator

import pytest

from bench import train_typer
from bench.entities import load_gold, predict
from memoryd.text import entity_typer
from memoryd.text.entities import Mention, extract, extract_note
from memoryd.text.entity_typer import CLASSES, NONE, Typer


def found(mentions: list[Mention]) -> dict[str, str]:
    return {m.key: m.type for m in mentions}


@pytest.fixture
def rules_alone() -> Iterator[None]:
    entity_typer.set_decider(None)
    try:
        yield
    finally:
        entity_typer.reset_decider()


def test_the_shipped_weights_load_and_are_small() -> None:
    data = importlib.resources.files("memoryd").joinpath("data", entity_typer.WEIGHTS)
    assert len(data.read_bytes()) < 1_000_000
    typer = entity_typer.decider()
    assert isinstance(typer, Typer)
    assert len(typer.weights) > 1000
    assert all(len(w) == len(CLASSES) for w in typer.weights.values())
    assert entity_typer.loads(entity_typer.dumps(typer.weights)).weights == typer.weights


def test_typing_is_deterministic() -> None:
    text = "Morales studied under Hinton.\nThe club joined the AHAC in 1887.\n"
    first = extract(text)
    assert all(extract(text) == first for _ in range(3))
    typer = entity_typer.decider()
    assert isinstance(typer, Typer)
    feats = ["b", "f:hinton", "p:under", "v0"]
    assert typer.decide(feats) == typer.decide(list(feats))


def test_training_is_deterministic() -> None:
    rows = [
        (["b", "f:ada", "fn"], 0),
        (["b", "f:kafka", "sys"], 1),
        (["b", "f:lisbon", "pl"], 2),
        (["b", "f:the", "cw"], 4),
    ] * 3
    one = train_typer.train(rows, epochs=3, min_count=1)
    assert one == train_typer.train(rows, epochs=3, min_count=1)
    typer = Typer({k: tuple(v) for k, v in one.items()}, floor=0.0)
    assert typer.decide(["b", "f:kafka", "sys"])[0] == "system"
    assert typer.decide(["b", "f:ada", "fn"])[0] == "person"


def test_names_the_rules_alone_mistype(rules_alone: None) -> None:
    cases = {
        "He builds the desktop client with Swing and ships it as a single jar.\n": "swing",
        "The club joined the AHAC in 1887 and left the league a year later.\n": "ahac",
        "She has been a member of the Bulgarian Academy of Sciences since 2004.\n": (
            "bulgarian academy of sciences"
        ),
    }
    for text, key in cases.items():
        assert found(extract(text))[key] != "system"
        entity_typer.reset_decider()
        assert found(extract(text))[key] == "system", text
        entity_typer.set_decider(None)
    text = "Morales was born in Valparaiso and studied under Hinton.\n"
    assert found(extract(text))["hinton"] == "other"
    entity_typer.reset_decider()
    assert found(extract(text))["hinton"] == "person"


def test_a_team_or_a_movement_is_not_a_person() -> None:
    kinds = found(extract("The Bruins played the Canadiens at home.\n"))
    assert kinds["bruins"] != "person"
    kinds = found(extract("The Jewish community of Berlin grew during the German Enlightenment.\n"))
    assert kinds["german enlightenment"] != "person" and kinds["berlin"] == "place"


class Drops:
    """A typer that reads everything as no name, typed by nothing."""

    def decide(self, feats: list[str], key: str, line: int) -> tuple[str, float]:
        return NONE, 0.0


def test_the_typer_drops_no_name_a_rule_or_the_note_names() -> None:
    entity_typer.set_decider(Drops())
    try:
        # no rule vote, named nowhere else: dropped
        assert "quillon" not in found(extract("We talked about Quillon for an hour.\n"))
        # a strong rule vote: never asked
        assert found(extract("Dr. Quillon said the build is green.\n"))["quillon"] == "person"
        # a weak rule vote keeps it ("my Fitbit": a possessed brand)
        assert "fitbit" in found(extract("The battery on my Fitbit died again.\n"))
        # front matter names it
        note = "---\nprojects: [Quillon]\n---\n# Plan\nWe talked about Quillon for an hour.\n"
        assert found(extract_note(note, "plan.md"))["quillon"] == "system"
    finally:
        entity_typer.reset_decider()


def test_rules_alone_when_asked(rules_alone: None) -> None:
    assert entity_typer.decider() is None
    assert found(extract("Install Homebrew first, then run the script.\n"))["homebrew"] == "system"


def test_a_proposed_name_is_labelled_by_the_span_it_overlaps() -> None:
    gold = [("nobel prize in physics", "other"), ("marie curie", "person")]
    assert train_typer.label("marie curie", gold, set()) == "person"
    assert train_typer.label("nobel prize", gold, set()) == "other"  # a word short
    assert train_typer.label("dr marie curie", gold, set()) == "person"  # a word long
    assert train_typer.label("curies", gold, set()) == NONE  # no word for word overlap
    assert train_typer.label("uiview", gold, {"uiview"}) == ""  # code: left out
    assert train_typer.label("the uiview", gold, {"uiview"}) == ""


class Slow:
    """The shipped typer asked the long way: decide(features) every time."""

    def __init__(self, typer: Typer) -> None:
        self.typer = typer

    def decide(self, feats: list[str], key: str, line: int) -> tuple[str, float]:
        return self.typer.decide(feats)


def test_the_remembered_name_rows_give_the_answer_of_the_features() -> None:
    """Extraction asks a Typer through decide_name (a name's own weights looked up once and
    remembered, the votes' features too): the same mentions as decide(features) on every item of
    the gold set, cold and remembered, and after another typer was asked."""
    shipped = entity_typer.decider()
    assert isinstance(shipped, Typer)
    items = load_gold()
    other = Typer({"b": (0.0, 0.0, 0.0, 0.0, 5.0), "fn": (9.0, 0.0, 0.0, 0.0, 0.0)})
    want: dict[int, list[list[Mention]]] = {}
    for typer in (Slow(shipped), Slow(other), shipped, shipped, other, shipped):
        entity_typer.set_decider(typer)
        try:
            got = [predict(it) for it in items]
        finally:
            entity_typer.reset_decider()
        if isinstance(typer, Slow):
            want[id(typer.typer)] = got
        else:
            assert got == want[id(typer)]
    assert want[id(shipped)] != want[id(other)]
