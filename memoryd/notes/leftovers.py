"""What a note write cut short leaves beside the note, cleared at the next start.

A note or daily-log write (core/swap.guarded_write_at) writes the new text to `.NAME.XXXXXXXX.tmp`
(core/fsutil.atomic_write_at) and gives the old file a second name, `.NAME.XXXXXXXX.old`, until
the swap is checked (core/swap.guarded_replace). A kill -9 or a power cut in between leaves them
in the person's folder for good: hidden files that sync tools and git carry along, and a second
name (a hard link) of the note, which every later write then warns about. At start, before the
first reconcile, each one beside a note (NAME is a path memoryd indexes) is cleared under the
writers' lock (the workspace is this daemon's alone, and every note and daily-log write holds that
lock, so no write in flight is touched):

- a name of a file that is still the note, or that another leftover also names: the name goes
  (the file keeps its other name: nothing is lost);
- a `.tmp` that is its file's only name: a write that was never put in place, so never
  acknowledged (as a database drops a transaction that did not commit): removed;
- an `.old` that is its file's only name: the note as it was before a write that was put in
  place but not yet checked (bytes an editor wrote to the old file in that instant are in it):
  moved to DATA_DIR/recovered/ under its path, and logged; never deleted.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.core.fsutil import SIDE_NAME
from memoryd.core.logsetup import get_logger
from memoryd.text.pathrules import PathRules, path_accepted

log = get_logger("memoryd.notes.leftovers")


@dataclass
class Cleared:
    removed: list[str] = field(default_factory=list)  # workspace paths
    recovered: list[str] = field(default_factory=list)  # DATA_DIR/recovered/ paths


def clear(
    workspace: Path,
    recovered: Path,
    rules: PathRules,
    lock: AbstractContextManager[Any],
    skip: set[str] | None = None,
) -> Cleared:
    """Clear the leftovers of writes cut short under `workspace`, holding the writers' `lock`
    folder by folder; `skip`: real paths of folders not to enter (memoryd's own inside it)."""
    done = Cleared()
    skip = skip or set()
    for dirpath, dirnames, filenames in os.walk(workspace):
        if rules.skip_hidden:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if skip:  # (a realpath per folder only where memoryd has folders of its own inside)
            dirnames[:] = [
                d for d in dirnames if os.path.realpath(os.path.join(dirpath, d)) not in skip
            ]
        found = [(m, n) for n in filenames if (m := SIDE_NAME.match(n))]
        if not found:
            continue
        rel_dir = Path(dirpath).relative_to(workspace).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        with lock, contextlib.suppress(OSError):  # a folder gone meanwhile: nothing to clear
            _clear_folder(Path(dirpath), prefix, found, recovered, rules, done)
    if done.removed or done.recovered:
        log.warning(
            "cleared what writes cut short (a kill or power cut) left beside notes",
            removed=done.removed[:20],
            removed_count=len(done.removed),
            recovered=done.recovered,
        )
    return done


def _clear_folder(
    folder: Path,
    prefix: str,
    found: list[tuple[re.Match[str], str]],
    recovered: Path,
    rules: PathRules,
    done: Cleared,
) -> None:
    groups: dict[tuple[int, int], list[tuple[str, str, str, float]]] = {}  # a file's leftovers
    for m, name in found:
        if not path_accepted(prefix + m["name"], rules):
            continue
        try:
            st = os.lstat(folder / name)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue  # not a file of ours
        groups.setdefault((st.st_dev, st.st_ino), []).append(
            (name, m["name"], m["kind"], st.st_mtime)
        )
    for key, names in groups.items():
        # an .old first: it is the one kept when the file has no other name
        names.sort(key=lambda n: n[2] != "old")
        name, note, kind, mtime = names[0]
        try:
            cur = os.lstat(folder / note)
            still_the_note = (cur.st_dev, cur.st_ino) == key
        except FileNotFoundError:
            still_the_note = False
        drop = names if still_the_note or kind == "tmp" else names[1:]
        for gone, *_ in drop:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / gone)
            done.removed.append(prefix + gone)
        if drop is names:
            continue
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(mtime))
        target = recovered / f"{prefix}{note}.{stamp}.old"
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.move(folder / name, target)  # copied first where DATA_DIR is another disk
        done.recovered.append(str(target))
