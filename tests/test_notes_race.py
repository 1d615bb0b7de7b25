"""A person's editor (or a script's `>>`) appending to a note while an agent makes sha-checked
writes to it: no line the editor appended is ever lost (docs/protocol.md, note.write)."""

from __future__ import annotations

import threading
import time
from typing import Any

from memoryd.core.errors import Conflict


def test_sha_checked_writes_never_drop_an_editors_appends(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "shared.md"
    app.notes.write("shared.md", "# Shared\n")
    stop = threading.Event()
    appended: list[str] = []

    def editor() -> None:
        n = 0
        while not stop.is_set():
            line = f"editor line {n}\n"
            with open(path, "a") as f:  # opened, then written: the window a rename can fall in
                f.write(line)
            appended.append(line)
            n += 1
            stop.wait(0.01)  # a fast typist, not a flood: the agent's writes get through too

    thread = threading.Thread(target=editor, daemon=True)
    thread.start()
    writes = conflicts = 0
    deadline = time.monotonic() + 8
    try:
        while time.monotonic() < deadline and writes < 1500:
            note = app.notes.read("shared.md")
            try:
                app.notes.write(
                    "shared.md",
                    note["content"] + f"agent line {writes}\n",
                    expected_sha256=note["sha256"],
                )
                writes += 1
            except Conflict:
                conflicts += 1
    finally:
        stop.set()
        thread.join(timeout=10)
    text = path.read_text()
    lost = [line for line in appended if line not in text]
    assert writes > 20, (writes, conflicts)  # the race was really run
    assert lost == [], f"{len(lost)} of {len(appended)} editor lines lost ({writes} writes)"
    for n in range(writes):  # and every write that succeeded is there too
        assert f"agent line {n}\n" in text
    assert sorted(p.name for p in app.cfg.workspace.iterdir()) == ["shared.md"]  # no temps
