"""Entity extraction on text nobody here wrote (stop 37's walk of LoCoMo's chats and the Obsidian
help vault): what people type in chat before or instead of a name, contractions, a place that is
an everyday word, a how-to's imperatives, English compounds written with hyphens. Each case was
an entity of its own on main ("Woah Joanna" a person, "Congrats" a person with 98 mentions,
"Life" a person, "Nice" a place, "Open Obsidian", "one-on-one" an identifier).
memoryd/text/entity_cues.py, entity_names.py, entity_spans.py; pure."""

from __future__ import annotations

import pytest

from memoryd.text.entities import extract


def names(text: str) -> dict[str, str]:
    """name -> type."""
    return {m.name: m.type for m in extract(text)}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Nate: Woah Joanna, that's incredible!", "Joanna"),
        ("Joanna: Woohoo Melanie, we did it!", "Melanie"),
        ("Maria: Yeah John, it's super important.", "John"),
        ("Nate: Yep John, sure thing.", "John"),
        ("James: Aww John, that's sweet.", "John"),
        ("Evan: Whoa Sam, that's a lot.", "Sam"),
        ("Bet Max loves the new toy.", "Max"),
        ("Deb: Hahaha Jolene, you made my day.", "Jolene"),
    ],
)
def test_an_interjection_before_a_name_is_not_part_of_it(text: str, name: str) -> None:
    found = names(text)
    assert name in found, found
    assert all(n == name or " " not in n for n in found), found  # no "Woah Joanna"


@pytest.mark.parametrize(
    "text",
    [
        "Joanna: Congrats, Nate! That's awesome!",  # Nate is a name: not the speaker's
        "Nate: Congrats on the chance to pitch.",
        "Melanie: Haha, that's so funny.",
        "Caroline: Awww! Hmmm, sooo cute. Yay!",
        "Gina: Nope. Oops, my bad. Phew.",
        "Dave: Ttyl! Anyways, bye!",
        "Caroline: Nice! Nice to meet you.",
        "Melanie: Life's too short. Life's tough but worth it.",
        "Jon: We'll see. I’ll try. They’re here. Didn’t know.",
    ],
)
def test_chat_words_are_no_entity(text: str) -> None:
    allowed = {text.split(":")[0], "Nate"}
    assert set(names(text)) <= allowed, names(text)


def test_a_possessive_or_a_place_still_reads_as_one() -> None:
    assert names("Melanie's car is red.") == {"Melanie": "person"}
    assert "Mark" in names("Mark's car is red.")
    assert "Cheney" in names("Cheney's back.")
    assert names("We flew to Nice last May.") == {"Nice": "place"}
    assert "HMM" in names("We trained an HMM on the tags.")  # an acronym, not "hmm"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Open Obsidian and pick a vault.", "Obsidian"),
        ("Launch Obsidian again.", "Obsidian"),
        ("Select Grafana in the list.", "Grafana"),
    ],
)
def test_a_how_to_s_imperative_is_not_part_of_the_name(text: str, name: str) -> None:
    assert list(names(text)) == [name]


@pytest.mark.parametrize(
    "word", ["one-on-one", "end-to-end", "up-to-date", "tug-of-war", "state-of-the-art"]
)
def test_an_english_compound_is_no_identifier(word: str) -> None:
    assert names(f"Sync is {word} now.") == {}


@pytest.mark.parametrize(
    "word", ["go-sql-driver", "order-events-consumer", "user-to-api", "payments-api-v2"]
)
def test_a_kebab_identifier_stays_one(word: str) -> None:
    assert names(f"Deploy {word} now.") == {word: "identifier"}


@pytest.mark.parametrize("label", ["**Examples:**", "Recommended:", "**Tip**:"])
@pytest.mark.parametrize("named", [False, True])
def test_a_label_alone_on_its_lines_is_no_speaker(label: str, named: bool) -> None:
    text = f"{label}\n- one\n{label}\n- two\n"
    if named:  # named mid-sentence too: a name, but no person
        text += f"See {label.strip('*:')} there.\n"
    assert "person" not in names(text).values(), names(text)


def test_a_speaker_of_several_lines_is_a_person() -> None:
    assert names("Maya: hi there\nMaya: hello again\nMaya: ok then\n") == {"Maya": "person"}


@pytest.mark.parametrize(
    "text",
    [
        "Jean-Luc Picard said hi; Jean-Luc agreed.",  # a sentence opens with the given name
        "We met Jean-Luc Picard; later Jean-Luc agreed.",
    ],
)
def test_a_hyphenated_given_name_is_part_of_the_name_and_means_it_alone(text: str) -> None:
    assert names(text) == {"Jean-Luc Picard": "person"}


@pytest.mark.parametrize(
    ("text", "name"),
    [("「田中さん」が来た。", "田中"), ("「田中さん」 helps.", "田中"), ("【王老师】讲课。", "王")],
)
def test_an_honorific_inside_the_brackets_says_person_as_one_after_them_does(
    text: str, name: str
) -> None:
    assert names(text) == {name: "person"}
    assert names(text.replace("さん」", "」さん").replace("老师】", "】老师")) == {name: "person"}
