"""Entity extraction in notes written in other languages of the Latin script: a word that opens
a sentence there and is no name ("Heute", "Dann", "Aber", "Pero", "Donc") is dropped as an
English common word is (memoryd/data/sentence-starters.txt, text/entity_names._keep), and the
names in the same sentences, at their start too, are still found."""

from __future__ import annotations

import pytest

from memoryd.text.entities import extract, extract_note

# (language, text, names that must be found, words that must not be names)
CASES = [
    (
        "de",
        "Heute habe ich mit Lena Fischer gesprochen. Dann sind wir nach Berlin gefahren. "
        "Aber das Wetter war schlecht. Morgen treffe ich Thomas Müller. Jonas hat angerufen. "
        "Leider kommt Anna Schmidt nicht. Danach schrieb Klaus eine Mail. Vielleicht kommt "
        "Sabine Weber auch. Gestern war Markus krank. Trotzdem haben wir Kubernetes aktualisiert.",
        {
            "Lena Fischer",
            "Berlin",
            "Thomas Müller",
            "Jonas",
            "Anna Schmidt",
            "Klaus",
            "Sabine Weber",
            "Markus",
            "Kubernetes",
        },
        {
            "Heute",
            "Dann",
            "Aber",
            "Morgen",
            "Leider",
            "Danach",
            "Vielleicht",
            "Gestern",
            "Trotzdem",
        },
    ),
    (
        "fr",
        "Donc nous avons parlé avec Claire Dubois hier. Ensuite elle est partie à Paris. "
        "Mais le projet avance bien. Demain je vois Julien Martin. Pierre a répondu. "
        "Alors Sophie Bernard a relancé le déploiement. Pourtant Nicolas était absent. "
        "Enfin nous avons migré vers PostgreSQL.",
        {
            "Claire Dubois",
            "Paris",
            "Julien Martin",
            "Pierre",
            "Sophie Bernard",
            "Nicolas",
            "PostgreSQL",
        },
        {"Donc", "Ensuite", "Mais", "Demain", "Alors", "Pourtant", "Enfin"},
    ),
    (
        "es",
        "Pero no pudimos terminar el informe. Hoy hablé con Carlos García en Madrid. Luego "
        "fuimos a comer. También llamó Lucía Fernández. Pedro revisó el código. Entonces "
        "Javier subió los cambios a GitHub. Mañana viene Elena Ruiz. Después Miguel cerró "
        "la incidencia.",
        {
            "Carlos García",
            "Madrid",
            "Lucía Fernández",
            "Pedro",
            "Javier",
            "GitHub",
            "Elena Ruiz",
            "Miguel",
        },
        {"Pero", "Luego", "También", "Entonces", "Mañana", "Después"},
    ),
    (
        "it",
        "Oggi ho parlato con Marco Rossi. Poi siamo andati a Milano. Però il progetto è in "
        "ritardo. Domani vedo Giulia Bianchi. Luca ha scritto. Allora Francesca ha riavviato "
        "Redis. Purtroppo Alessandro non c'era. Comunque Chiara Romano ha approvato.",
        {
            "Marco Rossi",
            "Milano",
            "Giulia Bianchi",
            "Luca",
            "Francesca",
            "Redis",
            "Alessandro",
            "Chiara Romano",
        },
        {"Oggi", "Però", "Domani", "Allora", "Purtroppo", "Comunque"},
    ),
    (
        "nl",
        "Vandaag heb ik met Pieter Bakker gesproken. Daarna gingen we naar Amsterdam. Maar "
        "het regende. Morgen zie ik Sanne Jansen. Daan belde terug. Gisteren heeft Emma de "
        "release gedaan. Misschien komt Lotte Visser ook. Helaas was Bram ziek.",
        {"Pieter Bakker", "Amsterdam", "Sanne Jansen", "Daan", "Emma", "Lotte Visser", "Bram"},
        {"Vandaag", "Daarna", "Maar", "Morgen", "Gisteren", "Misschien", "Helaas"},
    ),
    (
        "pt",
        "Hoje falei com João Silva. Depois fomos a Lisboa. Mas o projeto está atrasado. Amanhã "
        "vejo Ana Costa. Pedro respondeu. Então Mariana Souza abriu o ticket no Jira. Ontem "
        "Rafael corrigiu o erro. Talvez Beatriz Lima venha.",
        {
            "João Silva",
            "Lisboa",
            "Ana Costa",
            "Pedro",
            "Mariana Souza",
            "Jira",
            "Rafael",
            "Beatriz Lima",
        },
        {"Hoje", "Depois", "Amanhã", "Então", "Ontem", "Talvez"},
    ),
]


@pytest.mark.parametrize(("lang", "text", "names", "not_names"), CASES, ids=[c[0] for c in CASES])
def test_another_languages_sentence_opener_is_no_name(
    lang: str, text: str, names: set[str], not_names: set[str]
) -> None:
    found = {m.name for m in extract(text, 1)}
    assert not found & not_names, sorted(found & not_names)
    assert names <= found, sorted(names - found)


def test_a_heading_or_a_table_row_of_such_words_is_no_name() -> None:
    """A daily note's `## Heute Morgen` section, as `## This Morning`; a table's first column."""
    text = "## Heute Morgen\n\nLena Fischer rief an.\n\n| Danach | Berlin |\n|---|---|\n"
    found = {m.name for m in extract(text, 1)}
    assert not found & {"Heute Morgen", "Heute", "Morgen", "Danach"}, found
    assert {"Lena Fischer", "Berlin"} <= found


def test_a_first_name_that_opens_a_sentence_in_english_stays_a_name() -> None:
    """The words are dropped only where they open a sentence with no cue: "Dann said" (a
    shipped first name, and German "then") keeps Dann; mid-sentence every word is as before."""
    found = {m.name for m in extract("Dann said the deploy is done. We asked Dann twice.", 1)}
    assert "Dann" in found


GERMAN_NOTE = (
    "Gestern hat Anna mit dem Team über die Datenbank gesprochen. Der Server in Berlin startet "
    "nach dem Update nicht mehr, weil die Konfiguration fehlt. Wir müssen die Dokumentation für "
    "Kubernetes und den Rechnungsdienst aktualisieren. Thomas Müller kümmert sich um die "
    "Migration zu PostgreSQL. Frau Schmidt hat das Budget geprüft, und [[Wartungsfenster]] ist "
    "am Montag; das Wartungsfenster dauert zwei Stunden."
)


def test_german_nouns_are_no_names_but_its_names_are() -> None:
    """German writes every noun capitalised, so mid-sentence capitals, which mark a name in
    English, made an entity of each noun of a German note (Team, Datenbank, Server,
    Konfiguration, Dokumentation, Rechnungsdienst, Migration, Budget). On a German line a lone
    capitalised word is a name only with a sign: a shipped first name, place or system, an
    honorific, a spelling no noun has (PostgreSQL), or a name the text gives elsewhere (a
    wikilink, a full name)."""
    found = {m.name for m in extract(GERMAN_NOTE, 1)}
    nouns = {"Team", "Datenbank", "Server", "Konfiguration", "Dokumentation", "Update"}
    nouns |= {"Rechnungsdienst", "Migration", "Budget", "Stunden", "Montag"}
    assert not found & nouns, sorted(found & nouns)
    names = {"Anna", "Berlin", "Kubernetes", "Thomas Müller", "PostgreSQL", "Schmidt"}
    assert names | {"Wartungsfenster"} <= found, sorted(names - found)


@pytest.mark.parametrize(
    "line",
    [
        "The Server team met in Berlin with Anna; Datadog paged Thomas.",
        "We watched Die Hard und the rest at the Kino with Anna.",  # one German word or two
        "Ludwig von Mises wrote about der Markt and the Kommissar in the text.",
    ],
)
def test_an_english_line_with_german_words_keeps_its_capitals(line: str) -> None:
    """The German rule reads the line's grammar words: an English line quoting a German word
    or two, or a name with `von`, keeps mid-sentence capitals as names."""
    found = {m.name for m in extract(line, 1)}
    capitals = {w.strip(";,.") for w in line.split()[1:] if w[:1].isupper() and w.isalpha()}
    one_word = {w for w in capitals if w not in {"Die", "Hard", "Ludwig", "Mises"}}
    assert one_word <= {x for n in found for x in n.split()}, (one_word, found)


def test_a_german_first_name_alone_is_a_person() -> None:
    """German lines have none of the English cues ("said", "she"): a first name on the German
    list is a person there, opening a sentence or not."""
    text = "Klaus sagt, das Update ist fertig. Gestern hat Uwe den Server neu gestartet."
    found = {(m.name, m.type) for m in extract(text, 1)}
    assert {("Klaus", "person"), ("Uwe", "person")} <= found, found


def test_a_german_notes_headings_tables_and_lists_name_no_nouns() -> None:
    """A heading, a table row or a list item has too few grammar words to tell its language;
    in a note whose prose is German they are German too ("## Datenbank Migration" was a name),
    while an English line in it keeps its capitals."""
    text = (
        "# Wartung\n\n## Datenbank Migration\n\nGestern hat Anna mit dem Team über die "
        "Datenbank gesprochen. Der Server in Berlin startet nach dem Update nicht mehr.\n\n"
        "| Aufgabe | Verantwortlich |\n|---|---|\n| Backup Prüfung | Klaus |\n\n"
        "Wir müssen die Dokumentation für Kubernetes aktualisieren, und Thomas Müller kümmert "
        "sich darum.\n\n- Konfiguration prüfen\n- Rechnungsdienst neu starten\n\n"
        "The release notes are in Confluence, and Grafana shows the error rate.\n"
    )
    found = {m.name for m in extract_note(text)}
    nouns = {"Datenbank Migration", "Datenbank", "Migration", "Aufgabe", "Verantwortlich"}
    nouns |= {"Backup Prüfung", "Konfiguration", "Rechnungsdienst", "Team", "Server"}
    assert not found & nouns, sorted(found & nouns)
    names = {"Anna", "Berlin", "Klaus", "Kubernetes", "Thomas Müller", "Confluence", "Grafana"}
    assert names <= found, sorted(names - found)


@pytest.mark.parametrize(
    ("line", "names", "nouns"),
    [
        (
            "Notiz: Kunde Siemens will das Angebot bis Montag, Ansprechpartner ist Herr Becker.",
            {"Siemens", "Becker"},
            {"Kunde Siemens", "Angebot", "Montag", "Ansprechpartner"},
        ),
        (
            "Kunde Thomas Müller hat angerufen, das Ticket ist bei Jira.",
            {"Thomas Müller", "Jira"},
            {"Kunde Thomas Müller", "Ticket"},
        ),
        (
            "Meeting mit Jonas und Lea: wir haben die API Keys rotiert und den Grafana Alert "
            "angepasst.",
            {"Jonas", "Lea", "Grafana"},
            {"Grafana Alert", "Keys", "Alert"},
        ),
        (
            "Die Deutsche Bahn hat den Zug nach München gestrichen, also sind wir mit dem Auto "
            "gefahren.",
            {"Deutsche Bahn", "München"},
            {"Zug", "Auto"},
        ),
        (
            "Frau Dr. Weber hat die Rechnung an die Buchhaltung geschickt.",
            {"Weber"},
            {"Rechnung", "Buchhaltung"},
        ),
    ],
)
def test_a_name_on_a_german_line_keeps_none_of_the_nouns_beside_it(
    line: str, names: set[str], nouns: set[str]
) -> None:
    """A noun written next to a name ("Kunde Siemens", "den Grafana Alert") is no part of it,
    a place as German writes it (München: memoryd/data/places-de.txt) is a place, and a line of
    few grammar words ("hat", "die") is German too."""
    found = {m.name for m in extract(line, 1)}
    assert names <= found, sorted(names - found)
    assert not found & nouns, sorted(found & nouns)


def test_a_german_chats_speakers_are_people_and_its_nouns_are_not() -> None:
    """A speaker who opens several lines is a person whatever the language (Jannis is on no
    list), while the chat's nouns (Datenbank, Server, Deployment, Logs) are not names."""
    text = (
        "# Chat\n\n"
        "Jannis: hallo, wie geht es dir heute? Ich bin noch im Büro und die Datenbank ist "
        "langsam.\n"
        "Merle: mir geht es gut, aber der Server ist wieder kaputt und das Deployment hängt.\n"
        "Jannis: ich schaue mir das gleich an, die Logs sind in Grafana.\n"
        "Merle: danke, und sag mir Bescheid wenn es wieder läuft.\n"
    )
    found = {(m.name, m.type) for m in extract_note(text)}
    assert {("Jannis", "person"), ("Merle", "person"), ("Grafana", "system")} <= found, found
    nouns = {"Büro", "Datenbank", "Server", "Deployment", "Logs", "Bescheid"}
    assert not {name for name, _ in found} & nouns, found
