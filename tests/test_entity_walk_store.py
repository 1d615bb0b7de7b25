"""What the store keeps of an entity, found on stop 37's walk; both backends
(memoryd/store/entities.py, _entities; text/entity_spans.py, explicit). Its type is its
mentions' (store/entitytypes.py), not the last entry's: one memory that writes "@github" does
not retype GitHub, mentioned as a system many times; mentions that outnumber the others, or a
note whose title or front matter says what it is, do, and 'other' is always bettered. The
label of a link to a heading is no alias of the note."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import with_notes

from memoryd.core.errors import NotFound
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def kind(app: Any, name: str) -> str:
    return str(call(app, "entity", name=name)["type"])


def test_one_entry_does_not_retype_a_well_known_entity(make_app: Any) -> None:
    app = make_app(model=None)
    for i in range(6):
        call(app, "add", content=f"We pushed release {i} to GitHub and GitHub CI went green.")
    assert kind(app, "GitHub") == "system"
    call(app, "add", content="cc @github on the release notes.")  # an @mention votes person
    assert kind(app, "GitHub") == "system"
    assert call(app, "entity", name="GitHub")["mentions"] == 7  # a row per line and form
    # the door that lists them agrees
    listed = {e["name"]: e["type"] for e in call(app, "entities", top=100)["entities"]}
    assert listed["GitHub"] == "system"


def test_an_entry_that_says_more_or_a_note_that_says_what_it_is_retypes(make_app: Any) -> None:
    app = make_app(model=None)
    call(app, "add", content="cc @nimbus on the release notes.")
    assert kind(app, "nimbus") == "person"
    # a mention typed system against one typed person: a tie is no person
    call(app, "add", content="We deployed the Nimbus service; the Nimbus service is up.")
    assert kind(app, "nimbus") == "system"
    # a note whose front matter says what it is wins however often the store said otherwise
    for i in range(5):
        call(app, "add", content=f"Deploy {i}: the Orion service restarted.")
    assert kind(app, "Orion") == "system"
    app = with_notes(app, {"people/orion.md": "---\ntitle: Orion\ntype: person\n---\nHi.\n"})
    assert kind(app, "Orion") == "person"


def test_the_label_of_a_link_to_a_heading_is_no_alias_of_the_note(make_app: Any) -> None:
    """The Obsidian help vault links `[[Settings#Files and links|Files and links]]`: the label
    names a section of Settings, not Settings ("Account" and "Files and links" were among its
    aliases, and asking for them gave its page). A link to the note itself keeps its alias."""
    app = with_notes(
        make_app(model=None),
        {
            "Settings.md": "# Settings\n\nWhere Obsidian is configured.\n",
            "Sync.md": "# Sync\n\nSee [[Settings#Files and links|Files and links]] and"
            " [[Settings#^block1|Account]], or [[Settings|the settings page]].\n",
        },
    )
    page = call(app, "entity", name="Settings")
    assert "Files and links" not in page["aliases"] and "Account" not in page["aliases"]
    assert "the settings page" in page["aliases"]
    for label in ("Files and links", "Account"):
        with pytest.raises(NotFound):
            call(app, "entity", name=label)


@pytest.mark.parametrize("full_first", [False, True])
def test_a_hyphenated_given_name_alone_is_the_person_across_notes(
    make_app: Any, full_first: bool
) -> None:
    """ "Jean-Luc" in a daily note is Jean-Luc Picard of his own note, whichever came first (the
    first-name rule of store/entities.py took letters only)."""
    person = {"people/jlp.md": "# Jean-Luc Picard\n\nJean-Luc Picard runs the bridge.\n"}
    daily = {"daily/d.md": "# Standup\n\nLunch with Jean-Luc about the rota.\n"}
    app = make_app(model=None)
    for notes in (person, daily) if full_first else (daily, person):
        app = with_notes(app, notes)
    page = call(app, "entity", name="Jean-Luc")
    assert page["name"] == "Jean-Luc Picard", page
    assert {s["path"] for s in page["sources"]} == {"people/jlp.md", "daily/d.md"}


def test_a_tag_and_a_name_of_the_same_text_name_each_other(make_app: Any) -> None:
    """ "what do we know about caroline?" with a person Caroline and a tag #caroline: the page
    is the person's and says the tag is there too, and the other way round."""
    app = make_app(model=None)
    call(app, "add", content="Caroline said the rollout is done. Caroline wrote it up.")
    call(app, "add", content="Lunch plans for the week.", tags=["caroline"])
    page = call(app, "entity", name="caroline")
    assert (page["name"], page["type"]) == ("Caroline", "person")
    assert [a["name"] for a in page["also"]] == ["#caroline"], page.get("also")
    page = call(app, "entity", name="#caroline")
    assert (page["name"], page["type"]) == ("#caroline", "tag")
    assert [a["name"] for a in page["also"]] == ["Caroline"], page.get("also")


def test_a_name_of_several_words_that_matches_none_finds_its_words(make_app: Any) -> None:
    """An agent asks about "the Obsidian app" or "Caroline and Melanie": `kind: "entity"` and
    the page's suggestions (MCP's about relays both) named nothing; each word is matched then,
    a step lower than the whole name would be, the words that are never names left out."""
    app = make_app(model=None)
    call(app, "add", content="Caroline said the Obsidian vault syncs. Caroline agreed.")
    call(app, "add", content="Melanie said Obsidian works offline. Melanie agreed.")
    hits = call(app, "search", query="Caroline and Melanie", kind="entity")["hits"]
    assert {h["name"] for h in hits[:2]} == {"Caroline", "Melanie"}, hits
    assert all(h["score"] <= 0.8 for h in hits)
    hits = call(app, "search", query="the Obsidian app", kind="entity")["hits"]
    assert hits[0]["name"] == "Obsidian", hits
    with pytest.raises(NotFound) as missing:
        call(app, "entity", name="the Obsidian app")
    assert [s["name"] for s in missing.value.data["suggestions"]][:1] == ["Obsidian"]
    assert call(app, "search", query="Nobody Known", kind="entity")["hits"] == []
