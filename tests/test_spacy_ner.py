"""spaCy's recogniser beside the rules, measured for issue 20.1 and not shipped
(bench/spacy_ner.py): the combinations and the voter with a fake model, so spaCy need not be
installed; the voter goes into the extraction and out again without a trace. Pure."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from bench import spacy_ner
from memoryd.text.entities import extract


class FakeNlp:
    """Labels every occurrence of the given names, as spaCy's `nlp.pipe` would."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels
        self.calls = 0

    def pipe(self, texts: Any, batch_size: int = 32) -> Any:
        for text in texts:
            self.calls += 1
            ents = [
                SimpleNamespace(text=m.group(), label_=label)
                for name, label in self.labels.items()
                for m in re.finditer(re.escape(name), text)
            ]
            yield SimpleNamespace(ents=ents)


TEXT = "Ada Lovelace met Grace Hopper.\nGrace Hopper wrote about Stanley Cup.\n"


def _types(mentions: Any) -> dict[str, str]:
    return {m.key: m.type for m in mentions}


def test_ents_map_labels_and_drop_numbers_and_a_leading_the() -> None:
    nlp = FakeNlp({"the Mad Capsule Markets": "ORG", "Ada": "PERSON", "1998": "DATE"})
    (ents,) = spacy_ner.ents_of_lines(nlp, [[(3, "In 1998 Ada joined the Mad Capsule Markets.")]])
    assert ents == [(3, "Mad Capsule Markets", "system"), (3, "Ada", "person")]


def test_agree_keeps_a_person_only_where_spacy_says_person() -> None:
    mentions = extract(TEXT)
    ents = [(1, "Ada Lovelace", "person"), (1, "Grace Hopper", "system")]
    got = _types(spacy_ner.combine(mentions, ents, "agree"))
    assert got["ada lovelace"] == "person"
    assert got["grace hopper"] == "other"  # named, never a person


def test_veto_leaves_a_person_spacy_is_silent_about() -> None:
    mentions = extract(TEXT)
    assert _types(mentions)["grace hopper"] == "person"
    got = _types(spacy_ner.combine(mentions, [], "veto"))
    assert got == _types(mentions)


def test_typed_add_types_by_spacy_and_adds_what_the_rules_missed() -> None:
    mentions = extract(TEXT)
    ents = [(2, "Stanley Cup", "other"), (2, "wrote", "system")]
    out = spacy_ner.combine(mentions, ents, "typed+add")
    assert _types(out)["stanley cup"] == "other"
    assert any(m.key == "wrote" and m.source == "spacy" for m in out)


def test_the_voter_goes_into_the_extraction_and_out_again() -> None:
    text = "Maple Leaf approved the plan.\n"
    before = extract(text)
    nlp = FakeNlp({"Maple Leaf": "PERSON", "plan": "PRODUCT"})
    voter = spacy_ner.Voter(nlp, {"person": 3.0}, {"system": 2.0})
    with spacy_ner.voting(voter):
        during = extract(text)
    assert nlp.calls == 1
    assert _types(during)["maple leaf"] == "person"
    assert _types(during)["plan"] == "system"  # added: the rules found no name there
    assert extract(text) == before


def test_an_unconfirmed_rule_person_loses_its_vote() -> None:
    text = "Ada Lovelace said it works.\n"
    voter = spacy_ner.Voter(FakeNlp({}), {}, {}, unconfirmed=-5.0)
    with spacy_ner.voting(voter):
        got = _types(extract(text))
    assert _types(extract(text))["ada lovelace"] == "person"
    assert got["ada lovelace"] != "person"
