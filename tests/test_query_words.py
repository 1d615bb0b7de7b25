"""What people search for that is not a plain word (stop 37, branch walkh12): a corrected word
is shown as the notes write it, in every door that shows it."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

TYPO_NOTES = {
    "plain.md": "# Falsification\n\nPopper wrote about falsifiability and falsification of "
    "theories. Analysis of results follows.\n",
    "draft.md": "# Launch plan\n\nWe will falsify the results and analyze the metrics. The "
    "engine uses templates and the firmware is compiled; a->b dereferences.\n",
}


@pytest.fixture(scope="module")
def shared_app() -> Iterator[Callable[[str, str], Any]]:
    """shared_app(backend, corpus): one App per backend and corpus ("typo": TYPO_NOTES, no
    model; "symbol": SYMBOL_NOTES, indexed and embedded with the fake model) for the module's
    tests that only search it (a search writes nothing: it records no access). An App, its
    folders and its store of its own, closed at the module's end: 198 tests built one each
    (0.3-0.6 s apiece, most of this module's time)."""
    from memoryd.core.config import Config
    from memoryd.index.embed import FakeEmbedder, ModelHolder
    from memoryd.serve.app import App

    made: dict[tuple[str, str], Any] = {}
    dsns: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="mdqw-", dir="/tmp"))

    def get(backend: str, corpus: str) -> Any:
        if (backend, corpus) in made:
            return made[(backend, corpus)]
        where = base / f"{backend}-{corpus}"
        data: dict[str, Any] = {
            "workspace": str(where / "ws"),
            "data_dir": str(where / "data"),
            "socket": str(where / "s.sock"),
            "indexer": {"debounce_ms": 100},
            "embedding": {"allow_download": False},
            "logging": {"level": "debug"},
        }
        if backend == "postgres":
            import pgserver

            dsns.append(pgserver.fresh_dsn("api", migrated=True))
            data["store"] = {"backend": "postgres", "dsn": dsns[-1]}
        cfg = Config.from_dict(json.loads(json.dumps(data)))
        if corpus == "symbol":
            fake = FakeEmbedder()
            app = made[(backend, corpus)] = App(
                cfg, model=ModelHolder(lambda: fake, description="fake embedder")
            )
            app.model.start()
            assert app.model.wait_ready(30)
            indexed(app, SYMBOL_NOTES)
            app.embedder.run()
        else:
            app = made[(backend, corpus)] = App(
                cfg, model=ModelHolder(None, description="no model (test)")
            )
            indexed(app, TYPO_NOTES)
        return app

    yield get
    for app in made.values():
        app.close()
    if dsns:
        import pgserver

        for dsn in dsns:
            pgserver.release(dsn)
    shutil.rmtree(base, ignore_errors=True)


def indexed(app: Any, notes: dict[str, str]) -> Path:
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    for rel, text in notes.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    app.indexer.reconcile()
    return ws


# (query, mode, the answer's field that shows the correction): on main these showed a stem
# (falsif, templat, analys), an edit no note writes (falsificator, analysys) or a word of
# the wrong form
CORRECTED = [
    ("falsificaton", "auto", "corrected_query"),
    ("fasliyf", "auto", "corrected_query"),
    ("teplmates", "auto", "corrected_query"),
    ("analisys", "auto", "corrected_query"),
    ("falsificaton", "keyword", "suggestion"),
    ("teplmates", "keyword", "suggestion"),
    ("falsificaton teplmates", "keyword", "suggestion"),
    ("Poper", "auto", "corrected_query"),  # a name: as the notes write it, Popper
    ("poper teplmates", "keyword", "suggestion"),
    ("Analysis teplmates", "fuzzy", "suggestion"),  # a word not corrected: as typed
]


@pytest.mark.parametrize(("query", "mode", "field"), CORRECTED)
def test_a_corrected_word_is_shown_as_the_notes_write_it(
    shared_app: Any, backend: str, query: str, mode: str, field: str
) -> None:
    from memoryd.agents.formats import fmt_hits
    from memoryd.ctl.output import search_notes
    from memoryd.search.searcher import SearchRequest

    app = shared_app(backend, "typo")
    res = app.searcher.search(SearchRequest(query=query, mode=mode))
    shown = res.get(field)
    text = " ".join(TYPO_NOTES.values())
    # each word as the notes write it: lowercase when they write it so, else as they do
    written = {w if w.lower() not in text else w.lower() for w in re.findall(r"\w+", text)}
    assert shown, res
    assert set(shown.split()) <= written, f"{shown!r} holds a word no note writes"
    # every door that shows a search answer shows it: the MCP tool's text, memoryctl
    assert shown in fmt_hits(res)
    if field == "suggestion":
        assert f"did you mean: {shown}?" in search_notes(res)


SYMBOL_NOTES = {
    "csharp.md": "# Windows tool\n\nThe tool is written in C# on .NET 8; F# prices.\n",
    "clang.md": "# Firmware\n\nThe firmware is written in C, net of the home-grown bits.\n",
    "cpp.md": "# Engine\n\nThe engine is C++ 20 with templates.\n",
    "cpp17.md": "# Tools\n\nThe linter is built with C++17.\n",
    "shell.md": "# Shell\n\nExport $HOME/bin first, see ticket #123.\n",
    "apart.md": "# Apart\n\nC and F at home: 123 Main St, ASP.NET, net income.\n",
    # written in its front matter only, as rg reads the file (stop 38)
    "pricing.md": "---\nlanguage: F#\n---\n# Pricing\n\nThe pricing job runs nightly.\n",
}


def symbol_search(shared_app: Any, backend: str, query: str, mode: str) -> dict[str, Any]:
    """The query's answer (limit 20) over SYMBOL_NOTES, indexed and embedded (fake model)."""
    from memoryd.search.searcher import SearchRequest

    app = shared_app(backend, "symbol")
    return dict(app.searcher.search(SearchRequest(query=query, mode=mode, limit=20)))


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("C#", {"csharp.md"}),
        ('"C#"', {"csharp.md"}),
        ("F#", {"csharp.md", "pricing.md"}),
        ("C++", {"cpp.md", "cpp17.md"}),  # a version may follow it
        (".NET", {"csharp.md"}),
        ("$HOME", {"shell.md"}),
        ("#123", {"shell.md"}),
        ("the C#", {"csharp.md"}),
        ("C# F#", {"csharp.md"}),
        ("C++ OR $HOME", {"cpp.md", "cpp17.md", "shell.md"}),
        ("C# C++", set()),  # both in no note
        ("J#", set()),  # no note writes it: nothing, not the notes about J or C
    ],
)
@pytest.mark.parametrize("mode", ["auto", "keyword", "hybrid", "vector"])
def test_a_word_its_symbols_make_is_searched_as_written(
    shared_app: Any, backend: str, query: str, want: set[str], mode: str
) -> None:
    """`C#` listed the note about C first (the tokenizer drops `#`): a query of such words
    finds the notes that write them, as rg -F -i -w does, in every mode."""

    res = symbol_search(shared_app, backend, query, mode)
    got = {h["path"] for h in res["hits"]}
    # the fake embedder's neighbours may clear no floor: vector mode lists none but those
    assert got <= want if mode == "vector" else got == want, res["hits"]
    words = [w.strip('"') for w in query.split() if w not in ("the", "OR")]
    for h in res["hits"]:  # where marked (a keyword match), the word whole: `C++`, not `C`
        marked = {h["snippet"][a:b].lower() for a, b in h.get("highlights") or []}
        assert marked <= {w.lower() for w in words}, (marked, h["snippet"])


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("firmware in C#", {"csharp.md"}),  # the note about C has firmware, not C#
        ("C# tool", {"csharp.md"}),
        ("we ported the tool to C#.", {"csharp.md"}),
        ('"written in C#"', {"csharp.md"}),  # clang.md: "written in C,"
        ("`C#` prices", {"csharp.md"}),
        ("C++ -templates", {"cpp17.md"}),
        ("C# OR firmware", {"csharp.md", "clang.md"}),  # either alternative
        ("F# nightly", {"pricing.md", "csharp.md"}),  # pricing.md: in its front matter
        ("export $HOME", {"shell.md"}),
        ("J# tool", set()),  # no note writes it
    ],
)
@pytest.mark.parametrize("mode", ["auto", "keyword", "hybrid"])
def test_a_symbol_word_in_any_query_is_asked_as_written(
    shared_app: Any, backend: str, query: str, want: set[str], mode: str
) -> None:
    """With other words, in a sentence, quoted, with `-term` or `OR` (stop 38): every hit holds
    the symbol word as written (rg -F -i -w), or with OR another alternative; the query's
    other words rank them."""

    res = symbol_search(shared_app, backend, query, mode)
    assert {h["path"] for h in res["hits"]} == want, res["hits"]


def test_a_symbol_word_with_a_filter_is_asked_as_written(make_app: Any) -> None:
    from memoryd.serve import methods as api

    app = make_app(model=None)
    indexed(app, {f"team/{k}": v for k, v in SYMBOL_NOTES.items()} | {"solo/c.md": "In C.\n"})
    for path, want in (("team", {"team/csharp.md"}), ("solo", set())):
        params = {"query": "C# tool", "mode": "keyword", "path": path}
        res = api.lookup("search", params).fn(app, params)
        assert {h["path"] for h in res["hits"]} == want


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("written -C#", {"clang.md"}),  # the note that says C stays
        ("firmware NOT C#", {"clang.md"}),
        ("net -.NET", {"clang.md", "apart.md"}),  # ASP.NET is not .NET (rg -w)
        ("home -$HOME", {"clang.md", "apart.md"}),
        ("engine OR linter -C++", set()),
        ("templates -C++17", {"cpp.md"}),  # not a symbol word: a plain word, as indexed
        ("-C#", set()),  # exclusions alone match nothing
    ],
)
@pytest.mark.parametrize("mode", ["auto", "keyword", "hybrid"])
def test_a_symbol_word_excluded_is_excluded_as_written(
    shared_app: Any, backend: str, query: str, want: set[str], mode: str
) -> None:
    """`-C#` leaves out the notes that write C#, not every note that says C (stop 39; it was
    searched as `NOT c`), in every mode."""
    from memoryd.search.symbols import written_in

    res = symbol_search(shared_app, backend, query, mode)
    paths = {h["path"] for h in res["hits"]}
    # keyword: exactly these; with the vector pool, these and its neighbours
    assert paths == want if mode == "keyword" else want <= paths, res["hits"]
    gone = query.split()[-1].lstrip("-")
    assert not any(written_in(SYMBOL_NOTES[p], gone) for p in paths), res["hits"]


@pytest.mark.parametrize(
    ("text", "query", "words"),
    [
        ("-C# tool", "tool", ("C#",)),
        ("tool NOT C++", "tool", ("C++",)),
        ("(-.NET) x", "x", (".NET",)),
        ('-"C#" x', "x", ("C#",)),
        ('-"C# tool" x', '-"C# tool" x', ()),  # a phrase
        ("`go -C#` x", "`go -C#` x", ()),  # the code's own option
        ("NOT tool C#", "NOT tool C#", ()),
        ("-c x", "-c x", ()),
    ],
)
def test_the_symbol_words_a_query_excludes(text: str, query: str, words: tuple[str, ...]) -> None:
    from memoryd.search.ftsquery import unwritten

    assert unwritten(text) == (query, words)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("C#", ["C#"]),
        ("c++ and f#", ["c++", "f#"]),
        ("`.NET`", [".NET"]),
        ("$PATH?", ["$PATH"]),
        ("#123", ["#123"]),
        ("C# tool", ["C#"]),
        ("port to C#.", ["C#"]),
        ("(C++)", ["C++"]),
        ("NOT C#", []),  # an exclusion: not asked for (unwritten leaves it out)
        ("-C++ C#", ["C#"]),
        ("`go build -cover` C#", ["C#"]),
        ("#oncall", []),  # a tag: found as the note tags it
        ("node.js", []),
        ("C", []),
        ("", []),
    ],
)
def test_symbol_words(query: str, words: list[str]) -> None:
    from memoryd.search.symbols import symbol_words

    assert symbol_words(query)[0] == words


@pytest.mark.parametrize(
    "query",
    [
        "falsificaton -popper",
        "falsificaton NOT popper",
        'falsificaton -"Popper wrote"',
        "-popper falsificaton",
    ],
)
@pytest.mark.parametrize("mode", ["auto", "fuzzy"])
def test_what_a_query_excludes_the_typo_tier_leaves_out_too(
    shared_app: Any, backend: str, query: str, mode: str
) -> None:
    """`-term` excludes in every mode (docs/protocol.md): the corrected query dropped it, and
    the note that holds it came first. The correction shown is the word the answer writes
    (draft.md: falsify), not the one only the excluded note writes (falsification)."""
    from memoryd.search.searcher import SearchRequest

    app = shared_app(backend, "typo")
    res = app.searcher.search(SearchRequest(query=query, mode=mode))
    assert res["mode"] == "fuzzy" and res["corrected_query"] == "falsify"
    assert [h["path"] for h in res["hits"]] == ["draft.md"]


@pytest.mark.parametrize("query", ["falsification", "templates", "Popper", "falsification -popper"])
def test_the_fuzzy_mode_finds_a_word_spelled_right(
    shared_app: Any, backend: str, query: str
) -> None:
    """`--mode fuzzy` is typo tolerant: a query with nothing to correct is searched as typed
    (it answered nothing)."""
    from memoryd.search.searcher import SearchRequest

    app = shared_app(backend, "typo")
    want = app.searcher.search(SearchRequest(query=query, mode="keyword"))["hits"]
    res = app.searcher.search(SearchRequest(query=query, mode="fuzzy"))
    assert want and res["mode"] == "fuzzy" and "corrected_query" not in res
    assert [h["path"] for h in res["hits"]] == [h["path"] for h in want]


def test_memoryctl_paths_only_says_what_a_corrected_search_searched_for(
    daemon_factory: Any,
) -> None:
    """`search -l` prints only paths: the correction goes to stderr, as the header says it
    without -l, and a suggestion too."""
    d = daemon_factory()
    for rel, text in TYPO_NOTES.items():
        (d.workspace / rel).write_text(text)
    d.call("reindex")
    out = d.ctl("search", "-l", "teplmates")
    assert out.returncode == 0 and out.stdout.split() == ["draft.md"], out.stdout + out.stderr
    assert "searched for: templates" in out.stderr
    out = d.ctl("search", "teplmates")
    assert "searched for: templates" in out.stdout.splitlines()[0]
    out = d.ctl("search", "--mode", "keyword", "teplmates")
    assert out.returncode == 1 and "did you mean: templates?" in out.stderr, out.stderr


@pytest.mark.parametrize(
    "argv", [["search", "--dry-run"], ["search", "-popper"], ["search", "make", "--dry-run"]]
)
def test_text_that_starts_with_a_dash_is_told_to_go_after_two_dashes(
    tmp_path: Path, argv: list[str]
) -> None:
    """`memoryctl search --dry-run` said only "unrecognized arguments": the usage error says
    how to search for it (docs/memoryctl.md says so too), with --json as well. No daemon: the
    arguments are refused before any connection."""
    import json
    import subprocess
    import sys

    bin_ctl = Path(__file__).resolve().parent.parent / "bin" / "memoryctl"
    sock = ["--socket", str(tmp_path / "none.sock")]
    for json_flag in ([], ["--json"]):
        out = subprocess.run(
            [sys.executable, str(bin_ctl), *sock, *json_flag, *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2, out.stdout + out.stderr
        said = json.loads(out.stdout)["error"]["message"] if json_flag else out.stderr
        assert f"goes after --, as in memoryctl search -- '{argv[-1]}'" in said, said


# each: the notes, then the word the answer's first hit writes for "retro" (one edit from
# "retry", and the start of "retrospective": the typo tier asks for both)
RETRO = {
    "the retrospective first": (
        {
            "cadence.md": "# Cadence\n\nThe sprint retrospective is on Friday. The retrospective"
            " notes go in the wiki after the retrospective.\n",
            "retry.md": "# Uploads\n\nThe client tries the upload, then a retry.\n",
        },
        "retrospective",
    ),
    "the retry first": (
        {
            "cadence.md": "# Cadence\n\nSprint planning is on Monday, the retrospective on"
            " Friday, with many other words that make this note long and its match weak.\n",
            "retry.md": "# Retry\n\nRetry, retry, retry: the upload retry.\n",
        },
        "retry",
    ),
}


@pytest.mark.parametrize("case", list(RETRO))
def test_the_corrected_query_shows_the_word_the_answer_writes(
    make_app: Any, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo-tier answer's `corrected_query` (and memoryctl's "searched for" line, the MCP
    tool's text) names the word its first hit writes, the prefix reading's ("retrospective")
    where that hit holds it, not the best correction ("retry") no hit above it writes."""
    from memoryd.agents.formats import fmt_hits
    from memoryd.ctl.output import print_search
    from memoryd.search.searcher import SearchRequest

    notes, word = RETRO[case]
    app = make_app(model=None)
    indexed(app, notes)
    res = app.searcher.search(SearchRequest(query="when is the retro", mode="fuzzy"))
    assert res["mode"] == "fuzzy", res
    first = res["hits"][0]["content"].lower()
    assert word in first, (res["corrected_query"], first)
    assert res["corrected_query"].split()[-1] == word
    print_search(res)
    assert f"searched for: {res['corrected_query']}" in capsys.readouterr().out
    assert res["corrected_query"] in fmt_hits(res)
