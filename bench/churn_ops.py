"""The workspace changes of bench/churn.py: what editors, git and sync tools do to files (each
`op_*` one kind, seeded by the Churn's random generator, so a failing round replays)."""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import string
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

TOKEN = re.compile(r"\bzq[a-z]{10}\b")


def word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


def name(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(8))


def body(rng: random.Random, title: str) -> str:
    lines = [f"# {title}", "", f"Some text {word(rng)} about things.", ""]
    for _ in range(rng.randint(0, 4)):
        lines += [f"## Part {word(rng)}", "", f"More {word(rng)} words here.", ""]
    return "\n".join(lines)


class Churn:
    def __init__(self, d: Any, rng: random.Random) -> None:
        self.d = d
        self.ws = d.ws
        self.rng = rng
        self.log: list[str] = []
        # --memories: the memories added and not deleted (id -> its token), the deleted ones,
        # and what an op saw go wrong at once (a delete that left a line)
        self.memories: dict[int, str] = {}
        self.forgotten: dict[int, str] = {}
        self.tokens: dict[int, set[str]] = {}  # every token a memory's text ever had
        self.problems: list[str] = []
        # the logs moved or copied out of the log folder, and those the daemon has indexed
        # (moved before this round): a delete must reach those
        self.moved_out: set[Path] = set()
        self.settled_out: set[Path] = set()

    def notes(self) -> list[Path]:
        return [
            p
            for p in self.ws.rglob("*.md")
            if p.is_file() and not any(x.startswith(".") for x in p.relative_to(self.ws).parts)
        ]

    def folders(self) -> list[Path]:
        return [
            p
            for p in self.ws.rglob("*")
            if p.is_dir() and not any(x.startswith(".") for x in p.relative_to(self.ws).parts)
        ]

    def pick(self) -> Path | None:
        n = self.notes()
        return self.rng.choice(n) if n else None

    def new_path(self) -> Path:
        folders = [self.ws, *self.folders()]
        return self.rng.choice(folders) / f"n-{name(self.rng)}.md"

    def note(self, msg: str) -> None:
        self.log.append(msg)

    # individual operations
    def op_create(self) -> None:
        p = self.new_path()
        p.write_text(body(self.rng, p.stem))
        self.note(f"create {p.relative_to(self.ws)}")

    def op_vim(self) -> None:
        p = self.pick()
        if not p:
            return
        swp = p.parent / f".{p.name}.swp"
        swp.write_bytes(os.urandom(64))
        probe = p.parent / "4913"
        probe.write_text("")
        probe.unlink()
        bak = p.parent / (p.name + "~")
        os.rename(p, bak)
        p.write_text(body(self.rng, p.stem))
        bak.unlink()
        swp.unlink()
        self.note(f"vim {p.relative_to(self.ws)}")

    def op_emacs(self) -> None:
        p = self.pick()
        if not p:
            return
        lock = p.parent / f".#{p.name}"
        with contextlib.suppress(FileExistsError):
            os.symlink("user@host.1234:1700000000", lock)
        auto = p.parent / f"#{p.name}#"
        auto.write_text(body(self.rng, "autosave"))
        os.rename(p, p.parent / (p.name + "~"))
        p.write_text(body(self.rng, p.stem))
        auto.unlink()
        lock.unlink()
        self.note(f"emacs {p.relative_to(self.ws)} (keeps {p.name}~)")

    def op_jetbrains(self) -> None:
        p = self.pick()
        if not p:
            return
        tmp = p.parent / (p.name + "___jb_tmp___")
        old = p.parent / (p.name + "___jb_old___")
        tmp.write_text(body(self.rng, p.stem))
        os.rename(p, old)
        os.rename(tmp, p)
        old.unlink()
        self.note(f"jetbrains {p.relative_to(self.ws)}")

    def op_inplace(self) -> None:  # VS Code, Obsidian: truncate and write
        p = self.pick()
        if not p:
            return
        text = body(self.rng, p.stem)
        with open(p, "w") as f:
            f.flush()
            if self.rng.random() < 0.3:
                time.sleep(self.rng.choice([0.05, 0.3, 0.7]))  # a reader in between
            f.write(text)
        self.note(f"inplace {p.relative_to(self.ws)}")

    def op_atomic(self) -> None:
        p = self.pick()
        if not p:
            return
        tmp = p.parent / f".{p.name}.tmp{self.rng.randint(0, 99999)}"
        tmp.write_text(body(self.rng, p.stem))
        os.replace(tmp, p)
        self.note(f"atomic {p.relative_to(self.ws)}")

    def op_append(self) -> None:
        p = self.pick()
        if not p:
            return
        with open(p, "a") as f:
            f.write(f"\nappended {word(self.rng)}\n")
        self.note(f"append {p.relative_to(self.ws)}")

    def op_delete(self) -> None:
        p = self.pick()
        if p:
            p.unlink()
            self.note(f"delete {p.relative_to(self.ws)}")

    def op_rename(self) -> None:
        p = self.pick()
        if p:
            q = self.new_path()
            os.rename(p, q)
            self.note(f"rename {p.relative_to(self.ws)} -> {q.relative_to(self.ws)}")

    def op_rename_edit(self) -> None:  # git pull with a rename and an edit
        p = self.pick()
        if p:
            q = self.new_path()
            os.rename(p, q)
            with open(q, "a") as f:
                f.write(f"\nedited {word(self.rng)}\n")
            self.note(f"rename+edit {p.relative_to(self.ws)} -> {q.relative_to(self.ws)}")

    def op_mkdir_many(self) -> None:
        folder = self.ws / f"d-{name(self.rng)}"
        n = self.rng.choice([3, 20, 200])
        for i in range(n):
            sub = folder / f"s{i % 5}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"f{i}-{name(self.rng)}.md").write_text(body(self.rng, f"f{i}"))
        self.note(f"mkdir {folder.name} with {n}")

    def op_folder_rename(self) -> None:
        fs = self.folders()
        if not fs:
            return
        f = self.rng.choice(fs)
        q = (
            self.rng.choice([self.ws, *[x for x in fs if not x.is_relative_to(f)]])
            / f"r-{name(self.rng)}"
        )
        os.rename(f, q)
        self.note(f"folder rename {f.relative_to(self.ws)} -> {q.relative_to(self.ws)}")

    def op_folder_case(self) -> None:
        fs = self.folders()
        if not fs:
            return
        f = self.rng.choice(fs)
        q = f.parent / (f.name.swapcase())
        if q.exists():
            return
        os.rename(f, q)
        self.note(f"folder case {f.relative_to(self.ws)} -> {q.name}")

    def op_folder_out_back(self) -> None:
        fs = self.folders()
        if not fs:
            return
        f = self.rng.choice(fs)
        out = self.d.base / "outside" / f.name
        out.parent.mkdir(exist_ok=True)
        os.rename(f, out)
        if self.rng.random() < 0.5:
            time.sleep(self.rng.choice([0.1, 0.6, 1.2]))
        os.rename(out, f)
        self.note(f"folder out and back {f.relative_to(self.ws)}")

    def op_file_to_folder(self) -> None:
        p = self.pick()
        if not p:
            return
        p.unlink()
        p.mkdir()
        (p / f"inner-{name(self.rng)}.md").write_text(body(self.rng, "inner"))
        back = self.rng.random() < 0.5
        if back:
            time.sleep(self.rng.choice([0.0, 0.3, 0.8]))
            shutil.rmtree(p)
            p.write_text(body(self.rng, p.stem))
        self.note(f"file to folder {p.relative_to(self.ws)} back={back}")

    def op_hardlink(self) -> None:
        p = self.pick()
        if p:
            q = self.new_path()
            os.link(p, q)
            self.note(f"hardlink {p.relative_to(self.ws)} -> {q.relative_to(self.ws)}")

    def op_symlink(self) -> None:  # another name for a note, then a save through one of them
        p = self.pick()
        if not p:
            return
        q = self.new_path()
        os.symlink(os.path.relpath(p, q.parent), q)
        through = self.rng.choice([p, q])
        time.sleep(self.rng.choice([0.0, 0.7]))
        through.write_text(body(self.rng, p.stem))
        rel = [x.relative_to(self.ws).as_posix() for x in (q, p)]
        self.note(f"symlink {rel[0]} -> {rel[1]}, saved {through.name}")

    def op_mtime_back(self) -> None:
        p = self.pick()
        if not p:
            return
        st = p.stat()
        p.write_text(body(self.rng, p.stem))
        os.utime(p, (st.st_atime - 3600, st.st_mtime - 3600))
        self.note(f"mtime back {p.relative_to(self.ws)}")

    def op_conflict(self) -> None:
        p = self.pick()
        if not p:
            return
        kind = self.rng.choice(["dropbox", "syncthing", "stversions", "sttmp"])
        if kind == "dropbox":
            q = p.parent / f"{p.stem} (conflicted copy 2026-11-26).md"
            q.write_text(body(self.rng, p.stem))
        elif kind == "syncthing":
            q = p.parent / f"{p.stem}.sync-conflict-20261126-101010-ABCDEFG.md"
            q.write_text(body(self.rng, p.stem))
        elif kind == "stversions":
            v = self.ws / ".stversions" / p.parent.relative_to(self.ws)
            v.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, v / f"{p.stem}~20261126-101010.md")
            p.write_text(body(self.rng, p.stem))
        else:  # syncthing's temp then rename into place
            tmp = p.parent / f".syncthing.{p.name}.tmp"
            tmp.write_text(body(self.rng, p.stem))
            os.replace(tmp, p)
        self.note(f"sync {kind} {p.relative_to(self.ws)}")

    def op_burst_create(self) -> None:
        folder = self.ws / f"burst-{name(self.rng)}"
        folder.mkdir()
        for i in range(1000):
            (folder / f"b{i}-{name(self.rng)}.md").write_text(body(self.rng, f"b{i}"))
        self.note(f"burst 1000 in {folder.name}")

    def op_hot_save(self) -> None:
        p = self.pick()
        if not p:
            return
        end = time.monotonic() + self.rng.choice([2, 10])
        while time.monotonic() < end:
            with open(p, "w") as f:
                f.write(body(self.rng, p.stem))
            time.sleep(0.02)
        self.note(f"hot save {p.relative_to(self.ws)}")

    def op_git_checkout(self) -> None:
        g = ["git", "-C", str(self.ws)]
        env = dict(
            os.environ,
            GIT_AUTHOR_NAME="t",
            GIT_AUTHOR_EMAIL="t@t",
            GIT_COMMITTER_NAME="t",
            GIT_COMMITTER_EMAIL="t@t",
        )
        if not (self.ws / ".git").exists():
            subprocess.run([*g, "init", "-q", "-b", "main"], check=True)
        subprocess.run([*g, "add", "-A"], check=True, env=env)
        subprocess.run([*g, "commit", "-qm", "x", "--allow-empty"], check=True, env=env)
        br = f"b{self.rng.randint(0, 1 << 30)}"
        subprocess.run([*g, "checkout", "-qb", br], check=True)
        notes = self.notes()
        self.rng.shuffle(notes)
        for p in notes[: len(notes) // 3]:
            r = self.rng.random()
            if r < 0.4:
                p.write_text(body(self.rng, p.stem))
            elif r < 0.6:
                p.unlink()
            elif r < 0.8:
                q = self.new_path()
                os.rename(p, q)
        for _ in range(50):
            self.new_path().write_text(body(self.rng, "git"))
        subprocess.run([*g, "add", "-A"], check=True, env=env)
        subprocess.run([*g, "commit", "-qm", "y"], check=True, env=env)
        how = self.rng.choice(["checkout", "reset", "stay"])
        if how == "checkout":
            subprocess.run([*g, "checkout", "-q", "main"], check=True)
        elif how == "reset":
            subprocess.run([*g, "reset", "-q", "--hard", "HEAD~1"], check=True)
        if self.rng.random() < 0.3:
            (self.ws / f"untracked-{name(self.rng)}.md").write_text(body(self.rng, "u"))
            time.sleep(0.3)
            subprocess.run([*g, "clean", "-qfdx"], check=True)
        self.note(f"git {how} ({len(notes) // 3} touched)")

    def op_swap(self) -> None:
        n = self.notes()
        if len(n) < 2:
            return
        a, b = self.rng.sample(n, 2)
        tmp = a.parent / f".swap-{name(self.rng)}.tmp"
        os.rename(a, tmp)
        os.rename(b, a)
        os.rename(tmp, b)
        self.note(f"swap {a.relative_to(self.ws)} <-> {b.relative_to(self.ws)}")

    def op_chain(self) -> None:
        p = self.pick()
        if not p:
            return
        q, r = self.new_path(), self.new_path()
        os.rename(p, q)
        os.rename(q, r)
        if self.rng.random() < 0.5:
            p.write_text(body(self.rng, "again"))
        rel = [x.relative_to(self.ws).as_posix() for x in (p, q, r)]
        self.note("chain " + " -> ".join(rel))

    def op_trash(self) -> None:  # Obsidian's delete moves to .trash; restore moves back
        p = self.pick()
        if not p:
            return
        t = self.ws / ".trash"
        t.mkdir(exist_ok=True)
        os.rename(p, t / p.name)
        back = self.rng.random() < 0.5
        if back:
            time.sleep(self.rng.choice([0.0, 0.7]))
            os.rename(t / p.name, p)
        self.note(f"trash {p.relative_to(self.ws)} back={back}")

    def op_folder_in(self) -> None:
        out = self.d.base / "outside" / f"in-{name(self.rng)}"
        for i in range(self.rng.choice([1, 10, 100])):
            sub = out / f"s{i % 3}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"i{i}.md").write_text(body(self.rng, f"i{i}"))
        dest = self.rng.choice([self.ws, *self.folders()]) / out.name
        os.rename(out, dest)
        self.note(f"folder in {dest.relative_to(self.ws)}")

    def op_folder_out(self) -> None:
        fs = self.folders()
        if not fs:
            return
        f = self.rng.choice(fs)
        out = self.d.base / "outside" / f"gone-{name(self.rng)}"
        out.parent.mkdir(exist_ok=True)
        os.rename(f, out)
        self.note(f"folder out {f.relative_to(self.ws)}")

    def op_folder_replace(self) -> None:  # git: a folder renamed, a new one under the old name
        fs = self.folders()
        if not fs:
            return
        f = self.rng.choice(fs)
        q = f.parent / f"r-{name(self.rng)}"
        os.rename(f, q)
        for i in range(self.rng.choice([1, 5])):
            write = f / f"new{i}.md"
            write.parent.mkdir(parents=True, exist_ok=True)
            write.write_text(body(self.rng, "new"))
        self.note(f"folder replace {f.relative_to(self.ws)} (old -> {q.name})")

    def op_suffix(self) -> None:
        p = self.pick()
        if not p:
            return
        t = p.with_suffix(".txt")
        os.rename(p, t)
        back = self.rng.random() < 0.5
        if back:
            with open(t, "a") as f:
                f.write(f"\nsuffix {word(self.rng)}\n")
            os.rename(t, p)
        self.note(f"suffix {p.relative_to(self.ws)} back={back}")

    def op_hide_folder(self) -> None:
        fs = self.folders()
        if not fs:
            return
        f = self.rng.choice(fs)
        h = f.parent / f".{f.name}"
        os.rename(f, h)
        back = self.rng.random() < 0.6
        if back:
            time.sleep(self.rng.choice([0.0, 0.7]))
            os.rename(h, f)
        self.note(f"hide folder {f.relative_to(self.ws)} back={back}")

    def op_big_append(self) -> None:  # a file appended to while being indexed
        p = self.new_path()
        p.write_text(body(self.rng, "big") + ("filler words here\n" * 20000))
        for _ in range(20):
            with open(p, "a") as f:
                f.write(f"\nline {word(self.rng)}\n")
            time.sleep(0.05)
        self.note(f"big append {p.relative_to(self.ws)}")

    def op_restart_busy(self) -> None:  # changes while the daemon starts and reconciles
        self.d.stop()
        ops = [o for o in OPS if o not in ("restart", "restart_busy", "hot_save", "burst_create")]
        picked = [self.rng.choice(ops) for _ in range(self.rng.randint(2, 8))]
        pauses = [self.rng.choice([0.0, 0.1, 0.3, 0.8]) for _ in picked]

        def run() -> None:
            for o, pause in zip(picked, pauses, strict=True):
                time.sleep(pause)
                getattr(self, "op_" + o)()

        t = threading.Thread(target=run)
        t.start()
        self.d.start()
        t.join()
        self.note(f"restart busy {picked}")

    def op_restart(self) -> None:
        self.d.stop()
        ops = [o for o in OPS if o not in ("restart", "restart_busy", "hot_save", "burst_create")]
        for _ in range(self.rng.randint(1, 6)):
            getattr(self, "op_" + self.rng.choice(ops))()
        self.d.start()
        self.note("restarted")

    # -- memories and their daily log files (--memories; the daemon must be running) -------------

    def today_log(self) -> Path:
        return self.ws / "daily" / time.strftime("%Y-%m-%d.md")

    def op_mem_add(self) -> None:
        tok = word(self.rng)
        r = self.d.call("add", {"content": f"churn memory {tok} to keep"})
        res = r.get("result") or {}
        if res.get("stored") and not res.get("duplicate"):
            self.memories[res["id"]] = tok
            self.tokens[res["id"]] = {tok}
            self.note(f"memory add {res['id']}")
        else:
            self.problems.append(f"add refused: {r}")

    def op_mem_update(self) -> None:
        if not self.memories:
            return
        mid = self.rng.choice(sorted(self.memories))
        tok = word(self.rng)
        before = self._log_tokens()
        r = self.d.call("update", {"id": mid, "content": f"churn memory {tok} updated"})
        self._kept(before, mid, "update")
        self.tokens[mid].add(tok)
        if "error" in r:
            self.problems.append(f"update {mid}: {r['error']}")
            return
        self.memories[mid] = tok
        self.note(f"memory update {mid}")

    def op_mem_delete(self) -> None:
        if not self.memories:
            return
        mid = self.rng.choice(sorted(self.memories))
        before = self._log_tokens()
        r = self.d.call("delete", {"id": mid})
        self._kept(before, mid, "delete")
        if "error" in r:
            self.problems.append(f"delete {mid}: {r['error']}")
            return
        self.forgotten[mid] = self.memories.pop(mid)
        self.note(f"memory delete {mid}")
        # forget means forget: the delete has returned, no regular file of the log folder
        # holds the line any more
        for p in [*self._log_files(), *sorted(self.settled_out)]:
            with contextlib.suppress(OSError):
                if p.is_file() and f"<!-- m:{mid}:" in p.read_text(errors="replace"):
                    self.problems.append(f"deleted memory {mid}: its line is left in {p}")

    def _log_files(self) -> list[Path]:
        folder = self.ws / "daily"
        files = sorted(folder.rglob("*.md")) if folder.is_dir() else []
        return [p for p in files if p.is_file() and not p.is_symlink()]

    def _log_tokens(self) -> dict[Path, set[str]]:
        found = {}
        for p in self._log_files():
            with contextlib.suppress(OSError):
                found[p] = set(TOKEN.findall(p.read_text(errors="replace")))
        return found

    def _kept(self, before: dict[Path, set[str]], mid: int, what: str) -> None:
        """A memory's update or delete changes its own lines only: every other word of the
        log files is still there (a person's text on a line the memory's joined is not)."""
        after = self._log_tokens()
        for p, toks in before.items():
            lost = toks - after.get(p, set()) - self.tokens.get(mid, set())
            if p in after and lost:
                self.problems.append(f"{what} of memory {mid} took {sorted(lost)} from {p}")

    def _edit_log(self, how: str) -> None:
        p = self.today_log()
        if p.is_symlink() or not p.is_file():
            return
        text = p.read_text(errors="surrogateescape")
        if how == "hand_edit":  # an editor that saves atomically: a memory's text edited
            lines = text.split("\n")
            marked = [i for i, ln in enumerate(lines) if "<!-- m:" in ln]
            if not marked:
                return
            i = self.rng.choice(marked)
            lines[i] = lines[i].replace(
                "churn memory", f"churn memory, edited {word(self.rng)}:", 1
            )
            tmp = p.parent / f".{p.name}.tmp"
            tmp.write_text("\n".join(lines), errors="surrogateescape")
            os.replace(tmp, p)
        elif how == "no_eol":  # a person's line, saved without a line end
            with p.open("a") as f:
                f.write(f"{'' if text.endswith(chr(10)) else chr(10)}a thought {word(self.rng)}")
        else:  # a sync tool's conflict copy of the day's log beside it
            shutil.copy2(p, p.parent / f"{p.stem} (conflicted copy 2026-11-26).md")
        self.note(f"log {how} {p.relative_to(self.ws)}")

    def op_log_hand_edit(self) -> None:
        self._edit_log("hand_edit")

    def op_log_no_eol(self) -> None:
        self._edit_log("no_eol")

    def op_log_copy(self) -> None:
        self._edit_log("copy")

    def op_log_move_out(self) -> None:
        """A log moved out of the log folder (`mv daily/DATE.md archive/`), moved and renamed,
        or copied there with the log left in place."""
        logs = [p for p in self._log_files() if "<!-- m:" in p.read_text(errors="replace")]
        if not logs:
            return
        p = self.rng.choice(logs)
        how = self.rng.choice(["move", "rename", "copy"])
        new = p.name if how != "rename" else f"log of {p.stem} {name(self.rng)}.md"
        dest = self.ws / "archive" / new
        if dest.exists():
            return
        dest.parent.mkdir(exist_ok=True)
        if how == "copy":
            shutil.copy2(p, dest)
        else:
            os.rename(p, dest)
        self.moved_out.add(dest)
        self.note(f"log {how} out {p.relative_to(self.ws)} -> {dest.relative_to(self.ws)}")


OPS = [
    "create",
    "vim",
    "emacs",
    "jetbrains",
    "inplace",
    "atomic",
    "append",
    "delete",
    "rename",
    "rename_edit",
    "mkdir_many",
    "folder_rename",
    "folder_case",
    "folder_out_back",
    "file_to_folder",
    "hardlink",
    "symlink",
    "mtime_back",
    "conflict",
    "git_checkout",
    "restart",
    "burst_create",
    "hot_save",
    "swap",
    "chain",
    "trash",
    "folder_in",
    "folder_out",
    "folder_replace",
    "suffix",
    "hide_folder",
    "big_append",
    "restart_busy",
]
WEIGHTS = {
    "restart_busy": 0.5,
    "big_append": 0.3,
    "folder_in": 0.5,
    "burst_create": 0.2,
    "hot_save": 0.3,
    "restart": 0.4,
    "git_checkout": 0.5,
    "mkdir_many": 0.7,
}

# --memories: memories added, updated and deleted through the socket, and a person's edits of
# the daily log files (the other ops reach those files too: they pick any note)
MEMORY_OPS = [
    "mem_add",
    "mem_update",
    "mem_delete",
    "log_hand_edit",
    "log_no_eol",
    "log_copy",
    "log_move_out",
]
MEMORY_WEIGHTS = {"mem_add": 4.0, "mem_update": 1.5, "mem_delete": 1.5}
