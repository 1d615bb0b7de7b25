"""What people type into a search box, judged against rg (stop 36, branch walkf11).

    python -m bench.query_battery [--backend postgres --dsn DSN] [--json]
    python -m bench.query_battery --socket PATH --workspace DIR [--sample N] [--seed S] [--json]

Without --socket: writes NOTES (code, paths, CJK, emoji, numbers, dates, versions,
identifiers, URLs, RTL text...) into a temporary workspace, indexes it in process with the fake
embedder (meaning does not matter here: the checks are about words) and runs the battery on it,
through the JSON-RPC method table as the socket does. With --socket: on a running daemon whose
workspace is DIR (the Obsidian help vault, say), its own notes judged by the same oracle; the
NOTES literals that DIR does not hold are only checked for errors. `--sample N` adds N tokens with
inner punctuation taken from DIR's notes (`[[links]]`, `sync/setup`, `Ctrl+P`...) as literals.

The oracle is `rg -i -l -w -F WORD` over the workspace's markdown files (case-insensitive, the
literal between word boundaries: `Ctrl+E` is not `Ctrl+End`), in Python. Checks, one row each:

- literal: every token kind alone, inside a sentence and quoted: a keyword search at limit 100
  (`kind: chunk`, as `memoryctl search -l`) finds every note the oracle finds, or says how many
  more there are (`more`); each in every mode without an error; alone or quoted, no note that
  holds its words apart (a symbol word, `C#`, `$HOME`: no note without it as written);
- absent: an exact string no note holds (an IP, an email, a URL, a path, a key chord, a date,
  a tag or mention, an identifier) answers nothing in every mode, alone or in a question;
- wordless: a query with no letter, digit or symbol (`#`, `...`, a zero-width space, a lone
  variation selector) answers nothing in every mode (no vector neighbours as padding); a symbol
  (`🚀`, `→`, `€`: stop 42) is a literal, and its keyword hits all write it;
- odd: quotes, operators, `*`, stop words only, one character, control characters, tabs and
  newlines, RTL and mixed scripts, a 2,000-word paste and a 200 KB query: an answer in every mode
  and with every flag, never an error but a -32602 that names its param; the long ones say how
  many of their words the keyword search left out (`terms_ignored`);
- operators: `a OR b` finds the notes of either, `a -b` none with b, `"x y"` only the phrase;
- filters: odd values (`#tag`, `./path/`, dates, entities) answer or are refused by name;
- every answer is printed as memoryctl prints it and worded as the MCP search tool words it,
  without raising.

Exit status 1 when a check fails; `tests/test_query_battery.py` runs it on both backends.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODES = ("auto", "keyword", "vector", "hybrid", "fuzzy")
LIMIT = 100
FILLER = "Routine log entry about deploys, releases and monitoring dashboards. Nothing special."

NOTES = {
    "code/python.md": "---\ntags: [python, code]\n---\n# Python notes\n\n"
    "Call `foo.bar()` to refresh; the helper `compute_fx_rate()` lives in src/app/main.py.\n"
    "The class `HttpClientFactory` wraps requests; snake_case_name and CamelCaseName both.\n"
    "Error ERR_42 means the cache is cold; ERR_AUTH_2207 means the token expired.\n\n"
    "```python\ndef parse_config(path: str) -> dict:\n    return yaml.safe_load(open(path))\n```\n",
    "code/langs.md": "# Languages\n\nC++ for the engine, C# for the Windows tool, the .NET 8 "
    "runtime, node.js for the web front end. We pinned v2.3.1 of the parser and 1.0.0-rc.2 of "
    "the SDK. Press Ctrl+Shift+P for the palette, then Ctrl+E.\n",
    "ops/network.md": "# Network\n\nThe database is at 10.0.0.12 port 5432; IPv6 "
    "fe80::1ff:fe23:4567:890a. Docs at https://example.com/docs/api?x=1&y=2 and "
    "http://intranet.local:8080/wiki. Mail ops@example.com or jane.doe+alerts@corp.example.org.\n"
    "Commit 3f2a9c1d7e8b4a6f0c1d2e3f4a5b6c7d8e9f0a1b fixed it; short hash deadbeef.\n"
    "Windows: C:\\Users\\jane\\AppData\\Local\\memoryd. Unix: /var/lib/postgresql/14/main.\n"
    "Set $HOME before the build; the F# pricing job is ticket #123.\n"
    "The front matter key title:draft is not a column.\n",
    "people/team.md": "# Team\n\n@alice owns billing-svc; @bob_smith reviews. #oncall rotation "
    "is weekly. Tag #project/alpha.\nMeeting on 2026-03-05 at 14:30; the deadline is 03/15/2026. "
    "Budget $1,250.50 and 15% margin. x^2 grows.\n",
    "intl/cjk.md": "# 国际化\n\n我们用数据库存储用户数据。东京的勉強会は毎週です。"
    "데이터베이스를 사용합니다.\n",
    "intl/mixed.md": "# Mixed scripts\n\nCafé déjà vu naïve résumé. Ελληνικά κείμενο. Русский "
    "текст про базу данных. שלום עולם means hello world. مرحبا بالعالم in Arabic. Launch day 🚀 "
    "and 👍🏽 thumbs. Straße in Germany, İstanbul in Turkey.\n",
    # scripts with combining marks, and those written without spaces between words (stop 39)
    "intl/scripts.md": "# Scripts\n\nเราใช้ฐานข้อมูลสำหรับเก็บข้อมูลผู้ใช้ทุกวัน ພວກເຮົາໃຊ້ຖານຂໍ້ມູນ\n"
    "យើងប្រើមូលដ្ឋានទិន្នន័យ ကျွန်ုပ်တို့သည်ဒေတာဘေ့စ်ကိုအသုံးပြုသည်\n"
    "हिन्दी भाषा में कार्यक्रम अच्छा था। ང་ཚོས་གཞི་གྲངས་མཛོད། ΟΔΥΣΣΕΑΣ ήρθε.\n",
    "misc/stop.md": "# The the\n\nTo be or not to be, that is the question.\n",
    # symbols: emoji (a ZWJ family, a flag, a skin tone, a keycap, a variation selector),
    # arrows, math, currency, units, marks, box drawing; beside words and glued to them (stop 42)
    "misc/symbols.md": "# Symbols\n\n🚀launch on Friday 🎉. The 👨‍👩‍👧 trip to 🇩🇪 Berlin. "
    "Step 1️⃣ first; I ❤️ it. Flow: build → test → ship, map x→y. Error ±3 (± 3) and ∑x (∑ of rows). "
    "It costs €5 (5 €) or 12 £. 20 °C outside. Brand™ status ✓ done, ★★★ rated.\n"
    "┌─ box ─┐ and ✔ check.\n",
    # front-matter values: in the file, as rg reads it; in no body (stop 38)
    "proj/plan.md": "---\nstatus: awaiting-signoff\nproject: [kestrel, osprey]\nauthor: Ana Lima\n"
    "due: 2026-12-01\nclient:\n  name: Harbourside\ntags: [billing]\n---\n# Plan\n\n"
    "Move the ledger in spring.\n",
    "misc/phrase.md": "# Rock\n\nrock and roll, never roll and rock.\n",
    "misc/numbers.md": "# Numbers\n\nOrder 12345 shipped. 0xFF is 255. 1e-9 tolerance. 3.5 "
    "stars. Port 8080.\n",
    "logs/api.md": "# API log\n\n2026-03-07T09:15:00Z GET /v1/statements 200\n",
    "misc/zw.md": "# Zero width\n\nsome\u200bthing joined; non\u00a0breaking space.\n",
    # the words of the literals above, apart: a literal must not find them
    "misc/apart.md": "# Apart\n\nThe title of a draft. Users, jane and C. Ctrl and Shift and P, "
    "Ctrl or E. At 14 or 30. The x and 2. Https, example com, docs, api. Intranet local 8080, a "
    "wiki. 10 and 0 and 12. Margin of 15. F and the home page, net income, 123 Main St.\n",
    **{f"filler/note{i:02}.md": f"# Filler {i}\n\n{FILLER}\n" for i in range(12)},
}
# symbols, each a word of its own (stop 42): emoji with a ZWJ, a flag, a keycap, a selector
SYMBOLS = ["🚀", "👍🏽", "👍", "👨\u200d👩\u200d👧", "🇩🇪", "1️⃣", "❤️", "❤", "→", "±"]
SYMBOLS += ["∑", "€", "£", "°C", "™", "✓", "★", "─", "x→y", "🎉"]
# Every token kind a search box gets, as the user types it (NOTES holds each one).
LITERALS = {
    "call": ["foo.bar()", "compute_fx_rate()", "yaml.safe_load"],
    "identifier": ["snake_case_name", "CamelCaseName", "HttpClientFactory", "ERR_42"],
    "name": ["billing-svc"],
    "path": ["src/app/main.py", "/var/lib/postgresql/14/main", "C:\\Users\\jane"],
    "version": ["v2.3.1", "1.0.0-rc.2"],
    "language": ["node.js", ".NET"],
    # the tokenizer drops their symbols (c, net, home, 123): searched as written
    "symbol word": ["C#", "C++", "F#", "$HOME", "#123"],
    "tag and mention": ["#oncall", "#project/alpha", "@alice", "@bob_smith"],
    "address": [
        "10.0.0.12",
        "fe80::1ff:fe23:4567:890a",
        "https://example.com/docs/api",
        "http://intranet.local:8080/wiki",
        "ops@example.com",
        "jane.doe+alerts@corp.example.org",
    ],
    "hash": ["3f2a9c1d7e8b4a6f0c1d2e3f4a5b6c7d8e9f0a1b", "deadbeef"],
    "number and date": ["12345", "0xFF", "1e-9", "3.5", "2026-03-05", "14:30", "03/15/2026"],
    "money and math": ["$1,250.50", "15%", "x^2"],
    "key and column": ["Ctrl+Shift+P", "Ctrl+E", "title:draft"],
    "cjk": ["数据库", "勉強会", "데이터베이스를"],
    # a note's front matter: every kind of value (a word, a list's item, a name, a date, a
    # nested value), found as rg finds it in the file
    "front matter value": ["awaiting-signoff", "osprey", "Ana Lima", "2026-12-01", "Harbourside"],
    "script": ["Русский", "שלום", "مرحبا", "Ελληνικά", "Café", "cafe", "İstanbul", "Straße"],
    # a word with its vowel signs and viramas whole; Greek final sigma (Σ, ς and σ fold alike)
    "marked script": ["कार्यक्रम", "हिन्दी", "གཞི་གྲངས", "οδυσσεας"],
    # no spaces between words: found where its characters are adjacent, as CJK
    "unspaced script": ["ข้อมูล", "ฐานข้อมูล", "ຂໍ້ມູນ", "មូលដ្ឋានទិន្នន័យ", "ဒေတာဘេ့စ်"],
    # a symbol is a word of its own, one a grapheme (stop 42: each was a separator); a skin
    # tone and a variation selector fold away (👍 finds 👍🏽, ❤ finds ❤️), as diacritics do
    "symbol": SYMBOLS,
}
# Words no note holds though their letters are there (a piece of a marked word, a Thai word or
# sentence of words apart): 0 keyword hits (not `ABSENT`: no name or identifier, so the other
# modes may answer with neighbours)
ABSENT_WORDS = ["कि", "क", "กินข้าว", "ข้อมูลลับ", "ใช้ข้อมูลทุกวัน", "ផ្ទះ", "ကား"]
# Literals whose notes are found with others the index reads alike (no precision check):
KNOWN = {
    # a Hangul run of five or more syllables is also searched bigram by bigram, the rule for
    # unspaced Chinese and Japanese sentences (issue 19.7); Korean spaces its words
    "데이터베이스를": "notes sharing a bigram (데이터를) are found too",
}
# Sentences the literals are put in, as a question would hold them.
SENTENCES = ("where is {} used?", "notes about {} please")
# A symbol word in every shape of query (stop 38): with other words, at a sentence's end, in
# backticks, with an excluded word, OR a word no note holds; each hit writes it as written
SYMBOL_SHAPES = (
    "we ported it to {} last year.",
    "{} tool",
    "`{}`",
    "{} -filler",
    "{} OR zebra",
)
# Exact strings no note holds (rg: none): answered by nothing, not by weak vector neighbours.
ABSENT = [
    "10.9.9.9",
    "nobody@example.com",
    "https://nothing.example/x",
    "src/lib/none.rs",
    "Ctrl+Alt+Q",
    "title:nothing",
    "2031-01-01",
    "#nonexistenttag",
    "@nobody",
    "ERR_99",
    "compute_nothing()",
    "what is at 10.9.9.9?",
]
# (a lone variation selector or joiner is no symbol: `🚀` is a literal since stop 42, "symbol")
WORDLESS = ["#", "@", "-", "*", "...", "?", ",", ":)", "&&", "=>", "()"]
WORDLESS += ["\u200b", "\ufe0f", "\u200d"]


def odd_queries() -> dict[str, str]:
    """Inputs that must answer (or be refused by name) in every mode and with every flag."""
    rng = random.Random(36)
    words = " ".join(NOTES.values()).split()
    paste = " ".join(rng.choice(words) for _ in range(2000))
    return {
        "one quote": '"',
        "empty quotes": '""',
        "unbalanced quote": '"rock and',
        "trailing quote": 'rock roll"',
        "and": "rock AND roll",
        "near": "NEAR(rock roll)",
        "operators only": "OR AND NOT",
        "negation only": "-rock",
        "star": "*",
        "prefix": "deplo*",
        "column": "content:rock",
        "stop words": "the of and to be",
        "one letter": "x",
        "one digit": "7",
        "control": "rock\x01roll\x7f",
        "tabs and newlines": "rock\troll\nand\r\nmore",
        "rtl": "שלום עולם",
        "mixed scripts": "Русский текст 数据库 café 🚀",
        "zero width inside": "some\u200bthing",
        "paste 2000 words": paste,
        "200 KB": ("deploy monitoring " * 12000)[:200_000],
    }


PY, TEAM, ROCK = {"code/python.md"}, {"people/team.md"}, {"misc/phrase.md"}
# name: filters, the query, the notes it finds (None: refused, -32602 naming the param)
FILTERS: dict[str, tuple[dict[str, Any], str, set[str] | None]] = {
    "tag with #": ({"tags": ["#python"]}, "foo.bar()", PY),
    "tag any case": ({"tags": ["Python"]}, "foo.bar()", PY),
    "tag it lacks": ({"tags": ["python"]}, "rock roll", set()),
    "empty tag list": ({"tags": []}, "rock roll", ROCK),
    "path ./ and /": ({"path": "./code/"}, "foo.bar()", PY),
    "path of a file": ({"path": "code/python.md"}, "foo.bar()", PY),
    "path elsewhere": ({"path": "misc"}, "foo.bar()", set()),
    "path outside": ({"path": "../"}, "foo.bar()", None),
    "absolute path": ({"path": "/etc"}, "foo.bar()", None),
    "since epoch": ({"since": "0"}, "rock roll", ROCK),
    "until 1970": ({"until": "1970-01-01"}, "rock roll", set()),
    "since far": ({"since": "99999999999999"}, "rock roll", None),
    "kind chunk": ({"kind": "chunk"}, "rock roll", ROCK),
    "kind memory": ({"kind": "memory"}, "rock roll", set()),
    "entity unknown": ({"entities": ["Nobody Atall"]}, "rock roll", set()),
    "entity as mentioned": ({"entities": ["@alice"]}, "billing", TEAM),
    "entity elsewhere": ({"entities": ["@alice"]}, "rock roll", set()),
    "namespace all": ({"namespace": "*"}, "rock roll", ROCK),
    "namespace empty": ({"namespace": ""}, "rock roll", None),
    "min importance 11": ({"min_importance": 11}, "rock roll", None),
}
FLAGS: list[dict[str, Any]] = [
    {"group": "none"},
    {"workspace": "all"},
    {"concepts": ["deploy", "monitoring"]},
    {"explain": True},
    {"max_tokens": 50},
    {"include_constitutional": True},
    {"use_decay": False},
]


@dataclass
class Row:
    check: str
    query: str
    ok: bool
    detail: str = ""


@dataclass
class Battery:
    call: Callable[[dict[str, Any]], dict[str, Any]]  # search params -> {"result"} | {"error"}
    files: dict[str, str]  # workspace-relative path -> text (what rg reads)
    own: bool = True  # the workspace holds NOTES (FILTERS' expected notes apply)
    rows: list[Row] = field(default_factory=list)

    def add(self, check: str, query: str, ok: bool, detail: str = "") -> None:
        self.rows.append(Row(check, query, ok, detail))

    def answer(self, check: str, query: str, **params: Any) -> dict[str, Any] | None:
        """The result, or None after a row for an error that is not a -32602 naming a param."""
        resp = self.call({"query": query, **params})
        err = resp.get("error")
        if err is None:
            self.rendered(check, query, resp["result"])
            return dict(resp["result"])
        named = err.get("code") == -32602 and re.match(r"\w+: ", str(err.get("message")))
        self.add(check, query, bool(named), f"{params}: error {err.get('code')} {err['message']}")
        return None

    def rendered(self, check: str, query: str, result: dict[str, Any]) -> None:
        """The answer as memoryctl prints it (hits, notes on stderr) and as the MCP search tool
        words it: a row when either raises."""
        import contextlib
        import io

        from memoryd.agents.formats import fmt_hits
        from memoryd.ctl.output import print_search, search_notes

        try:
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                print_search(result)
            search_notes(result)
            fmt_hits(result)
        except Exception as exc:  # any raise is the finding
            self.add(check, query, False, f"rendering raised {type(exc).__name__}: {exc}")

    def rg(self, literal: str) -> set[str]:
        """`rg -i -l -w -F literal` over the workspace's files (a combining mark is a word's
        character, as in rg), or for a literal written without spaces (CJK, Thai...) the files
        where its characters are adjacent (`rg -i -l -F`)."""
        if _UNSPACED.search(literal):
            low = literal.casefold()
            return {path for path, text in self.files.items() if low in text.casefold()}
        w = rf"[\w{_marks()}]"
        rx = re.compile(f"(?<!{w})" + re.escape(literal) + f"(?!{w})", re.IGNORECASE)
        return {path for path, text in self.files.items() if rx.search(text)}

    def adjacent(self, literal: str, path: str) -> bool:
        """Whether the note holds the literal's words in order with nothing but punctuation,
        markup or spaces between them (as the index's tokenizer reads it: FTS5 phrases; a
        word may go on: stemming)."""
        words = [w[: max(4, len(w) - 3)] for w in re.split(r"[\W_]+", folded(literal)) if w]
        rx = r"(?<![^\W_])" + r"[^\W_]*[\W_]+".join(map(re.escape, words))
        return re.search(rx, folded(self.files[path]), re.IGNORECASE) is not None

    def literal(
        self,
        check: str,
        literal: str,
        query: str,
        limit: int = LIMIT,
        modes: tuple = MODES,
        recall: bool = True,
        **params: Any,
    ) -> None:
        """The notes rg finds are found (`recall`: the query asks for nothing else); with every
        mode in `modes` answering. `params`: a filter (`path`), which narrows rg's notes too."""
        from memoryd.search.symbols import written_in

        # a symbol word (C#, $HOME): the oracle's own list, not the code's under test
        symbol = literal in LITERALS["symbol word"]
        want = self.rg(literal)
        if "path" in params:
            want = {p for p in want if p.startswith(params["path"].rstrip("/") + "/")}
        for mode in modes:
            res = self.answer(check, query, mode=mode, limit=limit, **params)
            if res is None:
                continue
            got = {h["path"] for h in res["hits"]}
            if symbol:  # C# is not C, in every mode and shape of query
                wrong = sorted(p for p in got - want if not written_in(self.files[p], literal))
                self.add(check, query, not wrong, f"{mode}: without it as written {wrong[:3]}")
            if mode != "keyword":
                continue
            res = self.answer(check, query, mode="keyword", limit=limit, kind="chunk", **params)
            if res is None:
                continue
            got = {h["path"] for h in res["hits"]}
            missing = want - got if recall else set()
            ok = len(missing) <= int(res.get("more") or 0)
            detail = f"rg {len(want)}, found {len(got)}, more {res.get('more', 0)}"
            if missing:
                detail += f", missing {sorted(missing)[:3]}"
            self.add(check, query, ok, detail)
            if check.endswith(" symbol") and not check.startswith("sentence"):
                wrong = sorted(p for p in got if not holds_symbols(self.files[p], literal))
                self.add(check, query, not wrong, f"without its symbols {wrong[:3]}")
            # a sentence asks for any of its words; a sampled token's notes are not ours (their
            # headings, stemming and markup join words the oracle sees apart): recall only
            if not check.startswith(("sentence", "sampled")) and literal not in KNOWN:
                apart = sorted(p for p in got - want if not self.adjacent(literal, p))
                if symbol:  # C# is not C: only the notes that write it
                    apart = sorted(p for p in got - want if not written_in(self.files[p], literal))
                self.add(check, query, not apart, f"its words apart in {apart[:3]}")

    def excluded(self, literal: str) -> None:
        """`c -C#`: the notes that write the symbol word are left out, as `rg -v -F -w` reads
        it; those that say its word without the symbol stay (stop 39: `-C#` was `NOT c`)."""
        from memoryd.search.symbols import written_in

        base, check = literal.strip("#+.$"), "symbol excluded"
        query = f"{base} -{literal}"
        want = {p for p in self.rg(base) if not written_in(self.files[p], literal)}
        for mode in MODES:
            res = self.answer(check, query, mode=mode, limit=LIMIT, kind="chunk")
            if res is None:
                continue
            got = {h["path"] for h in res["hits"]}
            wrong = sorted(p for p in got if written_in(self.files[p], literal))
            self.add(check, query, not wrong, f"{mode}: writes it {wrong[:3]}")
            if mode == "keyword":
                missing = sorted(want - got)
                ok = len(missing) <= int(res.get("more") or 0)
                self.add(check, query, ok, f"rg {len(want)}, missing {missing[:3]}")

    def run(self, sample: list[str] | None = None) -> list[Row]:
        for kind, literals in LITERALS.items():
            for lit in literals:
                if not self.rg(lit):  # a vault that does not hold it: errors only
                    for mode in MODES:
                        self.answer(f"literal {kind}", lit, mode=mode, limit=LIMIT)
                    continue
                self.literal(f"literal {kind}", lit, lit)
                self.literal(f"quoted {kind}", lit, f'"{lit}"', modes=("keyword",))
                for s in SENTENCES:
                    self.literal(f"sentence {kind}", lit, s.format(lit), modes=("keyword",))
                if kind != "symbol word":
                    continue
                for s in SYMBOL_SHAPES:  # each hit writes it; rg's notes: with the word alone
                    alone = s in ("`{}`", "{} -filler", "{} OR zebra")
                    self.literal("symbol in a query", lit, s.format(lit), recall=alone)
                self.literal("symbol with a filter", lit, lit, path="code")
                self.excluded(lit)
        for lit in sample or []:
            self.literal("sampled", lit, lit)
        for word in ("deploys", "monitoring"):  # in every filler note: more than the limit
            self.literal("limit 5", word, word, limit=5)
        for date in ("2026-03-07", "2026/03/07"):  # only inside an ISO 8601 date-time
            for mode in ("auto", "keyword", "hybrid", "vector"):  # fuzzy: typos only
                res = self.answer("date in a timestamp", date, mode=mode, limit=LIMIT)
                if res is not None and self.own:
                    got = {h.get("path") for h in res["hits"]}
                    self.add("date in a timestamp", date, "logs/api.md" in got, f"{mode}: {got}")
        for q in ABSENT:
            held = self.rg(q.removeprefix("what is at ").rstrip("?"))
            for mode in MODES:
                res = self.answer("absent", q, mode=mode, limit=LIMIT)
                if res is not None and not held:
                    n = len(res["hits"])
                    self.add("absent", q, n == 0, f"{mode}: {n} hit(s)")
        for q in ABSENT_WORDS:
            if not self.rg(q):
                res = self.answer("absent word", q, mode="keyword", limit=LIMIT)
                if res is not None:
                    n = len(res["hits"])
                    self.add("absent word", q, n == 0, f"keyword: {n} hit(s)")
        for q in WORDLESS:
            for mode in MODES:
                res = self.answer("wordless", q, mode=mode, limit=LIMIT)
                if res is not None:
                    n = len(res["hits"])
                    self.add("wordless", q, n == 0, f"{mode}: {n} hit(s)")
        for name, q in odd_queries().items():
            for mode in MODES:
                res = self.answer(f"odd {name}", q, mode=mode)
                if res is not None and len(q.split()) > 64 and mode != "vector":
                    ok = int(res.get("terms_ignored") or 0) > 0
                    self.add(f"odd {name}", name, ok, f"{mode}: {res.get('terms_ignored')} ignored")
            for flags in FLAGS if len(q) < 1000 else ():  # the long ones: modes only
                self.answer(f"odd {name}", q, **flags)
        self.operators()
        for name, (filters, q, want) in FILTERS.items():
            for mode in MODES:
                res = self.answer(f"filter {name}", q, mode=mode, **filters)
                if want is None:  # refused by name (a row already), never answered
                    self.add(f"filter {name}", q, res is None, f"{mode}: answered {filters}")
                elif res is not None and mode == "keyword" and self.own:
                    got = {h.get("path") for h in res["hits"]}
                    self.add(f"filter {name}", q, got == want, f"{filters}: found {sorted(got)}")
        return self.rows

    def operators(self) -> None:
        def paths(query: str) -> set[str] | None:
            res = self.answer("operators", query, mode="keyword", limit=LIMIT, kind="chunk")
            return None if res is None else {h["path"] for h in res["hits"]}

        got = paths("deadbeef OR 12345")
        if got is not None:
            want = self.rg("deadbeef") | self.rg("12345")
            self.add("operators", "deadbeef OR 12345", want <= got, f"{sorted(got)}")
        got = paths("rock -roll")
        if got is not None:
            self.add("operators", "rock -roll", not (got & self.rg("roll")), f"{sorted(got)}")
        # a symbol excluded, in a phrase, as an alternative (stop 42)
        got = paths("launch -🚀")
        if got is not None:
            wrong = sorted(p for p in got if holds_symbols(self.files[p], "🚀"))
            self.add("operators", "launch -🚀", not wrong, f"writes it: {wrong[:3]}")
            want = {p for p in self.rg("launch") if not holds_symbols(self.files[p], "🚀")}
            if self.own:  # (a vault's: more than the limit, maybe)
                self.add("operators", "launch -🚀", got == want, f"{sorted(got)}")
        want = {p for p, t in self.files.items() if "day 🚀" in t.lower()}
        got = paths('"day 🚀"') if want or self.own else None
        if got is not None:
            self.add("operators", '"day 🚀"', bool(want) and got == want, f"{sorted(got)}")
        want = self.rg("🎉") | self.rg("★")
        got = paths("🎉 OR ★") if want or self.own else None
        if got is not None:
            self.add("operators", "🎉 OR ★", bool(want) and want <= got, f"{sorted(got)}")
        got = paths('"rock and roll"')
        if got is not None:
            want = {p for p, t in self.files.items() if "rock and roll" in t.lower()}
            self.add("operators", '"rock and roll"', got == want, f"{sorted(got)}")


# scripts written without spaces between words (the oracle's own list, not the code's under
# test): Thai, Lao, Myanmar, Khmer, kana, Han, Hangul
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
)


# what the index folds away in a symbol (a variation selector, a skin tone), as it does diacritics
_SYMBOL_FOLDS = re.compile("[\ufe0e\ufe0f\U0001f3fb-\U0001f3ff]")


def holds_symbols(text: str, literal: str) -> bool:
    """Whether text writes every symbol of the literal (a run of what is neither a letter,
    a digit nor a space: `🚀`, `👨‍👩‍👧`, `°`), a variation selector or a skin tone aside."""
    text, literal = _SYMBOL_FOLDS.sub("", text), _SYMBOL_FOLDS.sub("", literal)
    return all(part in text for part in re.findall(r"[^\w\s]+", literal))


@functools.cache
def _marks() -> str:
    """Every combining mark (category M*), a regex bracket body: rg's \\w holds them."""
    import unicodedata

    return "".join(
        chr(c) for c in range(0x300, 0x1F000) if unicodedata.category(chr(c)).startswith("M")
    )


def folded(text: str) -> str:
    """Diacritics removed, as the index folds them (`cafe` finds `Café`)."""
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def sampled(files: dict[str, str], n: int, seed: int) -> list[str]:
    """N tokens with inner punctuation from the notes (`sync/setup`, `Ctrl+P`, `[[links]]`)."""
    from memoryd.store.tokenizer import has_cjk

    found: set[str] = set()
    for text in files.values():
        for tok in text.split():
            tok = tok.strip("`*_,;()[]{}<>\"'!?|").rstrip(".:")
            inner = re.search(r"\w[^\w\s]+\w", tok)
            # not CJK sentences (searched bigram by bigram), possessives or `-exclusions`
            plain = not has_cjk(tok) and "'" not in tok and not tok.startswith("-")
            if 3 <= len(tok) <= 40 and inner and plain:
                found.add(tok)
    return random.Random(seed).sample(sorted(found), min(n, len(found)))


_FRONT = re.compile(r"\A---\n(.*?\n)---\n", re.DOTALL)
# a front-matter line's key (`status: `, `  - name: `): not searched, its value is
_KEY = re.compile(r"^([ \t]*(?:-[ \t]+)?)[^\s:#][^:\n]*:(?=\s|$)", re.MULTILINE)


def searched_text(text: str) -> str:
    """A note's text as search holds it, for the oracle: its front matter's values, not its
    keys (stop 38: `status: draft` is found by `draft`, not by `status`), and its body."""
    m = _FRONT.match(text)
    if m is None:
        return text
    return _KEY.sub(r"\1", m.group(1)) + "\n" + text[m.end() :]


def workspace_files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): searched_text(p.read_text(encoding="utf-8", errors="replace"))
        for p in sorted(root.rglob("*.md"))
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def app_caller(app: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Search through the JSON-RPC method table, as the socket does (param checks included)."""
    from memoryd.core.errors import MemorydError
    from memoryd.serve import methods as api

    def call(params: dict[str, Any]) -> dict[str, Any]:
        try:
            method = api.lookup("search", params)
            return {"result": method.fn(app, params)}
        except MemorydError as exc:
            return {"error": {"code": exc.code, "message": exc.message}}

    return call


def socket_caller(path: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    from bench.churn import rpc

    def call(params: dict[str, Any]) -> dict[str, Any]:
        return rpc(Path(path), "search", params, timeout=120)

    return call


@contextmanager
def fake_app(store: dict[str, Any] | None = None) -> Iterator[tuple[Any, Path]]:
    """An App on a temporary workspace holding NOTES, indexed, with the fake embedder."""
    from memoryd.core.config import Config
    from memoryd.index.embed import FakeEmbedder, ModelHolder
    from memoryd.serve.app import App

    base = Path(tempfile.mkdtemp(prefix="mdqb-"))
    ws = base / "ws"
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    cfg = Config.from_dict(
        {
            "workspace": str(ws),
            "data_dir": str(base / "data"),
            "socket": str(base / "s.sock"),
            "embedding": {"allow_download": False},
            "dailylog": {"enabled": False},
            **({"store": store} if store else {}),
        }
    )
    app = App(cfg, model=ModelHolder(FakeEmbedder, description="fake embedder"))
    try:
        app.indexer.reconcile()
        app.model.start()
        app.model.wait_ready(30)
        app.embedder.run()
        yield app, ws
    finally:
        app.close()
        shutil.rmtree(base, ignore_errors=True)


def report(rows: list[Row], as_json: bool) -> int:
    failed = [r for r in rows if not r.ok]
    if as_json:
        print(json.dumps([r.__dict__ for r in failed], ensure_ascii=False, indent=1))
    else:
        checks: dict[str, list[Row]] = {}
        for r in rows:
            checks.setdefault(r.check.split()[0], []).append(r)
        for name, rs in checks.items():
            print(f"{name:<10} {sum(r.ok for r in rs):>5} ok {sum(not r.ok for r in rs):>4} failed")
        for r in failed:
            print(f"FAIL {r.check}: {r.query[:80]!r}: {r.detail[:200]}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.query_battery", description=__doc__)
    p.add_argument("--socket", help="a running daemon's socket (with --workspace)")
    p.add_argument("--workspace", type=Path, help="that daemon's workspace folder")
    p.add_argument("--sample", type=int, default=0, help="tokens sampled from the workspace")
    p.add_argument("--seed", type=int, default=36)
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--dsn", help="PostgreSQL for --backend postgres")
    p.add_argument("--json", action="store_true", help="print the failed rows as JSON")
    a = p.parse_args(argv)
    if a.socket:
        if a.workspace is None:
            p.error("--socket needs --workspace")
        files = workspace_files(a.workspace)
        battery = Battery(socket_caller(a.socket), files, own=False)
        return report(battery.run(sampled(files, a.sample, a.seed)), a.json)
    store = {"backend": "postgres", "dsn": a.dsn} if a.backend == "postgres" else None
    from memoryd.core import logsetup

    logsetup.configure("warning")
    with fake_app(store) as (app, ws):
        files = workspace_files(ws)
        return report(Battery(app_caller(app), files).run(sampled(files, a.sample, a.seed)), a.json)


if __name__ == "__main__":
    sys.exit(main())
