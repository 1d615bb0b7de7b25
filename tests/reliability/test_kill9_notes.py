"""kill -9 while agents write notes through the daemon (note.append, note.write with the sha it
read, delete by path): every acknowledged append is in its note exactly once, every note holds
an acknowledged or an in-flight version, no note keeps a second name, and nothing of memoryd's
own (its temp files, the old file's backup name) is left in the workspace after the restart."""

from __future__ import annotations

import hashlib
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from .support import Conn, size

pytestmark = pytest.mark.slow

NOTES = 4  # notes appended to; as many again written whole


class Ledger:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.appended: dict[str, list[str]] = {}  # note -> lines acknowledged
        self.in_flight: dict[str, set[str]] = {}  # note -> lines sent, not answered
        self.written: dict[str, str] = {}  # note -> last acknowledged whole text
        self.maybe: dict[str, set[str]] = {}  # note -> whole texts sent, not answered
        self.appends = self.writes = self.deletes = 0


def _appender(sock: Path, ledger: Ledger, stop: threading.Event, tag: str) -> None:
    rng = random.Random(tag)
    n = 0
    try:
        with Conn(sock, timeout=10) as c:
            while not stop.is_set():
                n += 1
                note = f"log-{rng.randrange(NOTES)}.md"
                line = f"- {tag} line {n} {rng.random():.10f}"
                with ledger.lock:
                    ledger.in_flight.setdefault(note, set()).add(line)
                resp = c.call("note.append", {"path": note, "content": line})
                if "result" in resp:
                    with ledger.lock:
                        ledger.in_flight[note].discard(line)
                        ledger.appended.setdefault(note, []).append(line)
                        ledger.appends += 1
    except (OSError, ValueError):
        return


def _writer(sock: Path, ledger: Ledger, stop: threading.Event, tag: str) -> None:
    """note.write of whole notes, each based on the sha the writer read (a conflict is fine)."""
    rng = random.Random(tag)
    n = 0
    try:
        with Conn(sock, timeout=10) as c:
            while not stop.is_set():
                n += 1
                note = f"page-{rng.randrange(NOTES)}.md"
                with ledger.lock:
                    before = ledger.written.get(note)
                if rng.random() < 0.1 and before is not None:
                    with ledger.lock:
                        ledger.maybe.setdefault(note, set()).add("")
                    sha = hashlib.sha256(before.encode()).hexdigest()
                    resp = c.call("delete", {"path": note, "expected_sha256": sha})
                    if "result" in resp:
                        with ledger.lock:
                            ledger.written.pop(note, None)
                            ledger.maybe[note].discard("")
                            ledger.deletes += 1
                    continue
                text = f"# Page {note}\n\nversion {tag} {n} {rng.random():.10f}\n" * rng.randint(
                    1, 40
                )
                # based on the version acknowledged last ("": the note must not exist), so the
                # ledger's order of answers is the order of the changes
                sha = "" if before is None else hashlib.sha256(before.encode()).hexdigest()
                params = {"path": note, "content": text, "expected_sha256": sha}
                with ledger.lock:
                    ledger.maybe.setdefault(note, set()).add(text)
                resp = c.call("note.write", params)
                if "result" in resp:
                    with ledger.lock:
                        ledger.maybe[note].discard(text)
                        ledger.written[note] = text
                        ledger.writes += 1
    except (OSError, ValueError):
        return


def check_notes(workspace: Path, ledger: Ledger) -> None:
    """With the daemon dead: the notes hold what was acknowledged, and nothing else of ours."""
    for note, lines in ledger.appended.items():
        have = (workspace / note).read_text().splitlines()
        for line in lines:
            assert have.count(line) == 1, f"{note}: acknowledged line {line!r} x{have.count(line)}"
        for line in ledger.in_flight.get(note, ()):
            assert have.count(line) <= 1, f"{note}: in-flight line {line!r} written twice"
    for note in {*ledger.written, *ledger.maybe}:
        path = workspace / note
        text = path.read_text() if path.exists() else ""
        allowed = {ledger.written.get(note, ""), *ledger.maybe.get(note, ())}
        assert text in allowed, f"{note} holds a version nobody wrote ({len(text)} chars)"
        if text:  # the next cycle writes on what is there
            ledger.written[note] = text
        else:
            ledger.written.pop(note, None)
        ledger.maybe.pop(note, None)


def leftovers(workspace: Path) -> list[str]:
    """memoryd's hidden files beside the notes, and notes with a second name."""
    return sorted(
        p.name for p in workspace.iterdir() if p.name.startswith(".") or p.stat().st_nlink > 1
    )


def test_kill9_during_note_writes_keeps_every_acknowledged_line(daemon_factory: Any) -> None:
    cycles = size(3, 60)
    d = daemon_factory()
    ledger = Ledger()
    rng = random.Random(7)
    left_before_restart = 0
    for cycle in range(cycles):
        if cycle:
            left_before_restart += len(leftovers(d.workspace))
            d.start()
            # memoryd's own temp files from the killed run are gone once it has started (they
            # are cleared before the first reconcile, in the start-up's thread)
            wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
            assert leftovers(d.workspace) == [], leftovers(d.workspace)
            wait_for(lambda: d.call("status", {"check": True})["drift"]["total"] == 0, timeout=60)
        stop = threading.Event()
        workers = [
            threading.Thread(target=_appender, args=(d.socket, ledger, stop, f"a{cycle}-{i}"))
            for i in range(2)
        ]
        workers += [
            threading.Thread(target=_writer, args=(d.socket, ledger, stop, f"w{cycle}-{i}"))
            for i in range(2)
        ]
        for w in workers:
            w.start()
        time.sleep(rng.uniform(0.4, 1.2))
        d.stop(signal.SIGKILL)
        stop.set()
        for w in workers:
            w.join(30)
        check_notes(d.workspace, ledger)
    d.start()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    assert leftovers(d.workspace) == []
    print(
        f"\nkill -9 during note writes: {cycles} cycles; {ledger.appends} acknowledged appends, "
        f"{ledger.writes} writes, {ledger.deletes} deletes; temp files left by the kills and "
        f"cleared at the restart: {left_before_restart}"
    )
    assert ledger.appends > cycles and ledger.writes > cycles  # the work really ran
