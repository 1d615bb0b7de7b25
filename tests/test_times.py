"""Every time a caller gives, through every door, in one grammar (core/timeutil.py): the forms of
one date are one instant, the edges of the range are a clear -32602 or a documented meaning
(never -32603), and a note dated outside 1970..9999 is shown, filtered and paged like any other.

The class: each param that takes a time (`since`, `until`, `expires_at`) of each method that has
one, memoryctl's `--since`/`--until`/`--expires`, and a note's own dates (front matter
`date`/`created`/`updated`, a daily note's file name) as every page that prints a time reads
them (hits, list, recent, note list, entity pages)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from conftest import rpc, wait_for

from memoryd.core import timeutil
from memoryd.core.errors import InvalidInput
from memoryd.memory.validation import check_bound, check_time
from memoryd.search.request import SearchRequest
from memoryd.store.entries import Filters
from memoryd.text import markdown

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

# (method, the rest of a valid request, the param under test)
BOUNDS = [
    ("search", {"query": "kelpie"}, "since"),
    ("search", {"query": "kelpie"}, "until"),
    ("list", {}, "since"),
    ("list", {}, "until"),
    ("recent_activity", {}, "since"),
    ("entities", {}, "since"),
]
TIMES = [("add", {"content": "a kelpie memory that expires"}, "expires_at")]
# values at and past the edges: each is a result or -32602 naming the param, never -32603
EDGES: list[Any] = [
    "9999-12-31",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-05:00",
    "10000-01-01",
    "0000-01-01",
    "0001-01-01",
    "0001-01-01T00:00:00+05:00",
    "1969-12-31",
    "2026-02-30",
    "2026-13-01",
    "2026-11-26T25:00",
    "nan",
    "inf",
    "-5",
    -5,
    1e300,
    "",
    " ",
    "yesterday",
    "-7d",
    "7d",
    "20261126",
    "2026-W48-4",
]
# one day, every way ISO 8601 writes it, and its midnight UTC
ONE_DAY = ["2026-11-26", "20261126", "2026-W48-4", " 2026-11-26 "]
MIDNIGHT = datetime(2026, 11, 26, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("text", ONE_DAY)
def test_the_forms_of_one_date_are_one_instant_for_every_time_param(text: str) -> None:
    assert check_bound(text, "since") == MIDNIGHT
    assert check_bound(text, "until") == MIDNIGHT + 86400  # a bare date includes its day
    assert check_time(text, "expires_at") == MIDNIGHT
    assert markdown._timestamp(text) == MIDNIGHT  # a front-matter date


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1764150000", 1764150000.0),
        ("1764150000.5", 1764150000.5),
        ("2026-11-26T10:00", MIDNIGHT + 36000),
        ("2026-11-26T10:00Z", MIDNIGHT + 36000),
        ("2026-11-26T10:00:00+05:30", MIDNIGHT + 36000 - 19800),
        ("2026-11-26 10:00", MIDNIGHT + 36000),
        ("10000000", 10000000.0),  # eight digits that are no date: unix seconds
    ],
)
def test_times_and_unix_seconds_read_the_same_in_every_time_param(
    text: str, seconds: float
) -> None:
    assert check_bound(text, "since") == seconds
    assert check_bound(text, "until") == seconds
    assert check_time(text, "expires_at") == seconds


def test_a_duration_as_expires_at_names_ttl() -> None:
    with pytest.raises(InvalidInput, match=r"expires_at: .*not a duration \(give ttl\)"):
        check_time("7d", "expires_at")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0001-01-01T00:00:00+05:00", "1970-01-01T00:00:00Z"),  # year 0 in UTC
        ("1900-01-01", "1970-01-01T00:00:00Z"),
        (datetime(1, 1, 1, tzinfo=UTC), "1970-01-01T00:00:00Z"),
        ("9999-12-31T23:59:59-05:00", "9999-12-31T23:59:59Z"),
        ("2026-02-30", None),
        ("Nov 26, 2026", None),
    ],
)
def test_a_note_date_out_of_range_is_kept_inside_it(value: Any, shown: str | None) -> None:
    ts = markdown._timestamp(value)
    assert (None if ts is None else timeutil.iso(ts)) == shown
    assert ts is None or timeutil.MIN_TIME <= ts <= timeutil.MAX_TIME


@pytest.mark.parametrize("name", ["0001-01-01.md", "9999-12-31.md", "0000-01-01.md"])
def test_a_daily_note_name_out_of_range_is_kept_inside_it(name: str) -> None:
    ts = markdown.date_of_name(f"journal/{name}")
    assert ts is None or timeutil.MIN_TIME <= ts <= timeutil.MAX_TIME


@pytest.mark.parametrize("ts", [-62135614800.0, -1.0, 1e20, 253402318799.0])
def test_iso_renders_any_stored_time(ts: float) -> None:
    """Every page that prints a time (entity first/last seen, a hit, a job) goes through iso."""
    text = timeutil.iso(ts)
    assert text is not None and "1970-01-01T00:00:00Z" <= text <= "9999-12-31T23:59:59Z"


NOTES = {
    # a note dated before year 1 once its offset applies, one after 9999, one in 1900
    "early.md": "---\ndate: 0001-01-01T00:00:00+05:00\n---\n# Early\n\nQuokkaServer met "
    "[[Ravindra Patel]] about the kelpie.\n",
    "far.md": "---\ndate: 9999-12-31T23:59:59-05:00\n---\n# Far\n\nQuokkaServer talks to "
    "[[Ravindra Patel]] about the kelpie.\n",
    "old.md": "---\ncreated: 1900-01-01\n---\n# Old\n\nQuokkaServer and the kelpie, long ago.\n",
}


def test_every_time_param_answers_every_edge_and_notes_of_any_date_render(
    daemon_factory: Any,
) -> None:
    d = daemon_factory()
    for rel, text in NOTES.items():
        (d.workspace / rel).write_text(text)
    d.call("add", {"content": "QuokkaServer runs the kelpie rota"})
    wait_for(lambda: len(d.call("search", {"query": "kelpie"})["hits"]) == 4, timeout=30)

    wrong: list[str] = []
    for method, base, param in BOUNDS + TIMES:
        for value in EDGES:
            params = {**base, param: value}
            if method == "add":  # a new text each time: not a duplicate
                params["content"] = f"{base['content']} {value!r}"
            answer = rpc(d.socket, method, params)
            error = answer.get("error")
            if error is not None and (error["code"] != -32602 or param not in error["message"]):
                wrong.append(f"{method} {param}={value!r}: {error}")
    assert not wrong, "\n".join(wrong)

    # every page that prints a time renders these notes' dates, inside 1970..9999
    pages = [
        ("search", {"query": "kelpie", "limit": 20}),
        ("list", {"kind": "all", "limit": 100}),
        ("recent_activity", {"limit": 100}),
        ("note.list", {}),
        ("entity", {"name": "QuokkaServer"}),
        ("entity", {"name": "Ravindra Patel"}),
        ("entities", {}),
        ("related", {"name": "QuokkaServer"}),
    ]
    for method, params in pages:
        result = d.call(method, params)
        for text in _times(result):
            assert "1970-01-01T00:00:00Z" <= text <= "9999-12-31T23:59:59Z", (method, text)
    page = d.call("entity", {"name": "QuokkaServer"})
    assert page["first_seen"] == "1970-01-01T00:00:00Z"
    assert page["last_seen"] == "9999-12-31T23:59:59Z"


def test_a_date_in_digits_alone_is_that_date_through_memoryctl(daemon_factory: Any) -> None:
    """`--until 20991126` (ISO 8601's basic form) is that day, as the daemon reads the string,
    not unix second 20,991,126 (1970): memoryctl sends it as written."""
    d = daemon_factory()
    d.call("add", {"content": "the basic form of a date"})
    out = d.ctl("--json", "list", "--until", "20991126")
    assert out.returncode == 0, out.stdout + out.stderr
    assert [i["content"] for i in json.loads(out.stdout)["items"]] == ["the basic form of a date"]
    out = d.ctl("--json", "list", "--since", "20991126")
    assert out.returncode == 1 and json.loads(out.stdout)["items"] == []
    out = d.ctl("--json", "add", "expires in the basic form", "--expires", "20991126")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["memory"]["expires_at"] == "2099-11-26T00:00:00Z"


# a year or a month as a person means it (on main `2026` was unix second 2026, in 1970, and
# `2026-11` refused): (value, since, until), as unix seconds of midnight UTC
def _utc(*ymd: int) -> float:
    return datetime(*ymd, tzinfo=UTC).timestamp()  # type: ignore[misc]


PERIODS = [
    ("2026", _utc(2026, 1, 1), _utc(2027, 1, 1)),
    (" 2026 ", _utc(2026, 1, 1), _utc(2027, 1, 1)),
    (2026, _utc(2026, 1, 1), _utc(2027, 1, 1)),  # a number: an agent's JSON (a filter only)
    (2026.0, _utc(2026, 1, 1), _utc(2027, 1, 1)),
    ("1999", _utc(1999, 1, 1), _utc(2000, 1, 1)),
    ("2026-11", _utc(2026, 11, 1), _utc(2026, 12, 1)),
    ("2026-12", _utc(2026, 12, 1), _utc(2027, 1, 1)),
    ("2026-3", _utc(2026, 3, 1), _utc(2026, 4, 1)),
    ("9999", _utc(9999, 1, 1), timeutil.MAX_TIME + 1),
    ("2026-W48", _utc(2026, 11, 23), _utc(2026, 11, 30)),  # a week: Monday, to the next
    ("2026W48", _utc(2026, 11, 23), _utc(2026, 11, 30)),
]


@pytest.mark.parametrize(("value", "since", "until"), PERIODS)
def test_a_year_or_a_month_is_what_a_person_means_in_every_time_param(
    value: Any, since: float, until: float
) -> None:
    assert check_bound(value, "since") == since
    assert check_bound(value, "until") == until  # the whole year or month
    # a number elsewhere is unix seconds, as export writes them (an import round-trips)
    assert check_time(value, "expires_at") == (since if isinstance(value, str) else value)


@pytest.mark.parametrize("value", ["2026-13", "2026-00", "0999-01"])
def test_a_month_or_year_that_cannot_be_is_refused_by_name(value: str) -> None:
    for param in ("since", "until"):
        with pytest.raises(InvalidInput, match=f"^{param}: "):
            check_bound(value, param)
    with pytest.raises(InvalidInput, match=r"^since: out of range"):
        check_bound("1969", "since")  # before 1970, as 1969-12-31 is


def test_a_year_or_a_month_through_memoryctl_and_the_socket(daemon_factory: Any) -> None:
    """Every command with --since/--until, and the socket's number: this year finds what was
    added now, last year (as --until) and next year (as --since) find nothing."""
    d = daemon_factory()
    d.call("add", {"content": "the kelpie rota of this year"})
    wait_for(lambda: d.call("search", {"query": "kelpie"})["hits"], timeout=30)
    now = datetime.now(UTC)
    year, month = str(now.year), f"{now.year}-{now.month:02}"
    for argv, key in (
        (["search", "kelpie"], "hits"),
        (["list"], "items"),
        (["recent"], "items"),
    ):
        for flag, value, found in (
            (f, v, found)
            for f, v, found in (
                ("--since", year, True),
                ("--since", month, True),
                ("--until", year, True),
                ("--until", month, True),
                ("--until", str(now.year - 1), False),
                ("--since", str(now.year + 1), False),
            )
            if f == "--since" or argv != ["recent"]  # recent has no --until
        ):
            out = d.ctl("--json", *argv, flag, value)
            assert out.returncode == (0 if found else 1), (argv, flag, value, out.stderr)
            assert bool(json.loads(out.stdout)[key]) is found, (argv, flag, value, out.stdout)
    assert d.call("search", {"query": "kelpie", "since": now.year})["hits"]
    assert not d.call("search", {"query": "kelpie", "until": now.year - 1})["hits"]
    out = d.ctl("--json", "entities", "--since", month)
    assert out.returncode in (0, 1), out.stderr
    out = d.ctl("search", "kelpie", "--since", "2026-13")
    assert out.returncode == 2 and "since" in out.stderr, out.stderr
    out = d.ctl("--json", "add", "a kelpie memory for a year", "--expires", str(now.year + 1))
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["memory"]["expires_at"] == f"{now.year + 1}-01-01T00:00:00Z"


def _times(value: Any) -> list[str]:
    """Every ISO time in a result (strings shaped like 2026-11-26T10:00:00Z)."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in _times(v)]
    if isinstance(value, list):
        return [t for v in value for t in _times(v)]
    if isinstance(value, str) and len(value) == 20 and value[10] == "T" and value[-1] == "Z":
        return [value]
    return []


def test_a_past_expiry_is_refused_by_every_door_that_sets_one(daemon_factory: Any) -> None:
    """add refused an expires_at in the past (a mistaken year or zone); update stored it and
    the memory vanished at once. memoryctl's update --expires is the same door."""
    d = daemon_factory()
    mid = d.call("add", {"content": "a memory whose expiry is set again"})["id"]
    for method, params in (
        ("add", {"content": "born expired"}),
        ("update", {"id": mid}),
    ):
        for past in ("2020-01-01", 1_000_000_000, "2020-01-01T00:00:00+05:30"):
            error = rpc(d.socket, method, {**params, "expires_at": past}).get("error")
            assert error is not None and error["code"] == -32602, (method, past, error)
            assert "expires_at: is in the past" in error["message"]
    out = d.ctl("update", str(mid), "--expires", "2020-01-01")
    assert out.returncode == 2 and "in the past" in out.stderr + out.stdout
    assert d.call("get", {"id": mid})["expires_at"] is None


@pytest.mark.parametrize("field", ["date", "created", "updated"])
def test_a_note_dated_ahead_does_not_take_every_other_notes_recency(
    make_app: Any, field: str
) -> None:
    """Recency counts from the newest text ranked: a note whose front matter dates it ahead
    (a meeting next week, a year mistyped 2090) was the newest, and every note written today
    counted as decades old beside it. Its update time is the moment it was read; the date
    itself still filters (`since`)."""
    app = make_app(model=None, dailylog={"enabled": False})
    ws = app.cfg.workspace
    (ws / "today.md").write_text("# Today\n\nThe kelpie rota moved to Tuesday.\n")
    (ws / "ahead.md").write_text(f"---\n{field}: 2090-01-01\n---\n# Ahead\n\nThe kelpie rota.\n")
    app.indexer.reconcile()
    hits = {
        h["path"]: h
        for h in app.searcher.search(SearchRequest(query="kelpie rota", explain=True, limit=10))[
            "hits"
        ]
    }
    assert hits["today.md"]["explain"]["recency"] > 0.9 * hits["ahead.md"]["explain"]["recency"]
    assert hits["ahead.md"]["updated_at"] <= timeutil.iso(time.time() + 1)
    if field != "updated":  # the note's date still says when it is, for since/until
        assert hits["ahead.md"]["created_at"] == "2090-01-01T00:00:00Z"
        since = SearchRequest(
            query="kelpie rota", filters=Filters(since=datetime(2089, 1, 1, tzinfo=UTC).timestamp())
        )
        assert [h["path"] for h in app.searcher.search(since)["hits"]] == ["ahead.md"]
