"""The derived tables after any sequence of operations equal a rebuild (branch ent14, stop 39).

python -m bench.entity_rebuild [--seed N] [--seeds S] [--rounds R] [--ops K] [--pg] [--dsn DSN]
                               [--log] [--lazy]
python -m bench.entity_rebuild --cost NOTES --dir DIR [--edits E]

Each round applies K seeded operations to a workspace through the real indexer and the memory
API of an App (keyword mode, no model): notes created, edited, deleted, moved and renamed, that
gain or lose a title, a front-matter alias, a `people:` list or a `[[wikilink]]`, that write a
full name once or twice or a first name alone; memories added, updated, deleted and expired;
the memories exported, deleted and imported again; the App closed and opened again (a restart);
one file's `reindex --full`. After the round the derived tables (entities with name, type and
count, mentions with line, surface and `declared`, relations with count, links, chunks with their
tags and front-matter values, documents' titles, log_marks) are read with ids replaced by what
they name (an entity by its key, a chunk by its path and seq, a memory by its id and text) and
compared with those of a new store built from the same files and memories: the memories
imported from an export, the workspace (a copy) reconciled, then `reindex --full`. Any
difference is printed and counted; the same seed replays the same operations. SQLite, or
PostgreSQL with --pg (an embedded server, or the one at --dsn: a new database per store).
--log turns the daily log on: memories' lines go into its files, which are synced after each
operation as the watcher would, and log_marks is compared too. --lazy reads the notes'
entities (store/entitystage.py) at each round's end only, as the daemon's stage may: a round's
edits, moves and deletes then meet notes whose entities are still pending.
Exit status 1 when a round differs."""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memoryd.store import entitystage

FULL = ["Lena Fischer", "Lena Okafor", "Caroline Baker", "Maya Okafor", "Ravi Patel", "John Locke"]
ALIAS = {"Caroline Baker": "Caz", "Ravi Patel": "RP", "Maya Okafor": "Mo"}
SYSTEMS = ["billing-svc", "Kubernetes", "compute_fx_rate()", "ERR_AUTH_2207"]
WORDS = ["plan", "invoice", "trail", "release", "meeting", "budget", "dog", "garden"]
FOLDERS = ["", "people/", "daily/", "proj/"]


def slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def first(name: str) -> str:
    return name.split()[0]


def sentence(rng: random.Random, files: list[str]) -> str:
    full, word, system = rng.choice(FULL), rng.choice(WORDS), rng.choice(SYSTEMS)
    return rng.choice(
        [
            f"{full} talked about the {word}.",
            f"{first(full)} wrote back about the {word}.",
            f"{first(full)}: the {word} is done.",
            f"Ask {full} about {system} and the {word}.",
            f"See [[{full}]] on the {word}.",
            f"See [[{rng.choice(files) if files else slug(full)}]] for the {word}.",
            f"{ALIAS.get(full, first(full))} and {first(rng.choice(FULL))} met at the {word}.",
            f"The {word} runs on {system}.",
            f"{full} and {full} again, twice on one line.",
        ]
    )


def note_text(rng: random.Random, files: list[str]) -> str:
    lines: list[str] = []
    who = rng.choice(FULL)
    fm: list[str] = []
    if rng.random() < 0.3:
        fm.append(f"title: {who}")
    if rng.random() < 0.3 and who in ALIAS:
        fm.append(f"aliases: [{ALIAS[who]}]")
    if rng.random() < 0.2:
        fm.append(f"people: [{rng.choice(FULL)}]")
    if rng.random() < 0.2:
        fm.append(f"tags: [{rng.choice(WORDS)}]")
    if fm:
        lines += ["---", *fm, "---"]
    if rng.random() < 0.5:
        lines += [f"# {who if rng.random() < 0.6 else rng.choice(WORDS).title()}", ""]
    for _ in range(rng.randint(1, 6)):
        lines.append(sentence(rng, files))
        if rng.random() < 0.3:
            lines += ["", f"## {rng.choice(WORDS).title()}", ""]
    return "\n".join(lines) + "\n"


class World:
    """One App over a workspace, and the operations a round applies to it."""

    def __init__(
        self,
        base: Path,
        store: dict[str, Any],
        rng: random.Random,
        log: bool = False,
        lazy: bool = False,
    ) -> None:
        self.base, self.store, self.rng, self.log = base, store, rng, log
        self.lazy = lazy  # the notes' entities read at the round's end, not after each operation
        self.ws = base / "ws"
        self.ws.mkdir(parents=True)
        self.now = 1_800_000_000.0
        self.app = open_app(base, self.ws, store, lambda: self.now, log)
        self.memories: list[int] = []

    def rebase(self, store: dict[str, Any]) -> None:
        """Go on from a new store built as `rebuilt` builds one (after a round that differed:
        the next round's differences are then its own)."""
        items = export(self.app)
        self.app.close()
        shutil.rmtree(self.base / "data")
        self.store = store
        self.app = open_app(self.base, self.ws, store, lambda: self.now, self.log)
        build(self.app, items)

    def files(self) -> list[str]:
        return sorted(
            str(p.relative_to(self.ws)) for p in self.ws.rglob("*.md") if "daily/" not in str(p)
        )

    def sync(self) -> None:
        self.app.indexer.reconcile()
        self.caught_up()

    def caught_up(self) -> None:
        """The notes' entities read (store/entitystage.py), unless `lazy`: the round's next
        operations then meet notes whose entities are pending (edited, moved, deleted so)."""
        if not self.lazy:
            entitystage.store_caught_up(self.app.store)

    def op(self) -> str:
        done = self._op()
        if self.log:  # the watcher reads the daily log a memory's line went into
            self.sync()
        return done

    def _op(self) -> str:
        rng, files = self.rng, self.files()
        choices = ["create", "memory_add"]
        if files:
            choices += ["edit", "edit", "delete", "move", "reindex_one", "append_line"]
        if self.memories:
            choices += ["memory_update", "memory_delete", "expire"]
        choices += ["import_export", "restart"]
        kind = rng.choice(choices)
        self.now += 60
        if kind == "create":
            rel = f"{rng.choice(FOLDERS)}{rng.choice([slug(rng.choice(FULL)), rng.choice(WORDS)])}"
            rel += f"{rng.randint(0, 3) or ''}.md"
            path = self.ws / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(note_text(rng, [Path(f).stem for f in files]), encoding="utf-8")
            self.sync()
            return f"create {rel}"
        if kind in ("edit", "append_line"):
            rel = rng.choice(files)
            path = self.ws / rel
            if kind == "edit":
                path.write_text(note_text(rng, [Path(f).stem for f in files]), encoding="utf-8")
            else:
                with path.open("a", encoding="utf-8") as f:
                    f.write(sentence(rng, [Path(f).stem for f in files]) + "\n")
            self.sync()
            return f"{kind} {rel}"
        if kind == "delete":
            rel = rng.choice(files)
            (self.ws / rel).unlink()
            self.sync()
            return f"delete {rel}"
        if kind == "move":
            rel = rng.choice(files)
            new = f"{rng.choice(FOLDERS)}{slug(rng.choice(FULL))}-{rng.randint(0, 9)}.md"
            if (self.ws / new).exists():
                return "move (skipped: exists)"
            (self.ws / new).parent.mkdir(parents=True, exist_ok=True)
            (self.ws / rel).rename(self.ws / new)
            self.sync()
            return f"move {rel} -> {new}"
        if kind == "reindex_one":
            rel = rng.choice(files)
            self.app.notes.forget_hashes(rel)
            self.app.indexer.sync_paths([self.ws / rel])
            self.caught_up()
            return f"reindex {rel}"
        if kind == "memory_add":
            text = " ".join(sentence(rng, []) for _ in range(rng.randint(1, 2)))
            fields: dict[str, Any] = {}
            if rng.random() < 0.3:
                fields["expires_at"] = self.now + rng.choice([30, 600])
            added = self.app.memories.add(content=text, **fields)
            if not added.duplicate:
                self.memories.append(added.id)
            return f"memory_add {added.id} {text!r} {fields}"
        if kind == "memory_update":
            mid = rng.choice(self.memories)
            text = " ".join(sentence(rng, []) for _ in range(rng.randint(1, 2)))
            try:
                self.app.memories.update(mid, {"content": text})
            except Exception as exc:  # a duplicate's text: refused
                return f"memory_update {mid} refused: {exc}"
            return f"memory_update {mid} {text!r}"
        if kind == "memory_delete":
            mid = rng.choice(self.memories)
            self.app.memories.delete(mid)
            self.memories.remove(mid)
            return f"memory_delete {mid}"
        if kind == "expire":
            self.now += 300
            self.app.memories.expire()
            self.memories = alive(self.app)
            return "expire"
        if kind == "import_export":
            items = export(self.app)
            for mid in self.memories:
                self.app.memories.delete(mid)
            self.app.memories.import_items(items)
            self.memories = alive(self.app)
            return f"import_export {len(items)}"
        self.app.close()
        self.app = open_app(self.base, self.ws, self.store, lambda: self.now, self.log)
        return "restart"


def alive(app: Any) -> list[int]:
    return [int(r["id"]) for r in export(app)]


def export(app: Any) -> list[dict[str, Any]]:
    from memoryd.memory import transfer

    return list(app.store.read(lambda con: list(transfer.export(con, namespace=None))))


def open_app(
    base: Path, ws: Path, store: dict[str, Any], clock: Callable[[], float], log: bool = False
) -> Any:
    """An App (no model) on `ws`, its data in `base`; `log`: the daily log on (default off)."""
    from memoryd.core.config import Config
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App

    data: dict[str, Any] = {
        "workspace": str(ws),
        "data_dir": str(base / "data"),
        "socket": str(base / "s.sock"),
        "embedding": {"allow_download": False},
        "dailylog": {"enabled": log},
    }
    if store:
        data["store"] = store
    app = App(Config.from_dict(data), model=ModelHolder(None, description="none"))
    app.memories.clock = clock
    return app


# -- the tables, with ids replaced by what they name ---------------------------------------------

_ENTRY = (
    "CASE WHEN e.kind = 'memory' THEN 'memory ' || e.id || ' ' || e.content"
    " ELSE d.path || '#' || e.seq END"
)


def tables(app: Any) -> dict[str, set[tuple[Any, ...]]]:
    def read(con: Any) -> dict[str, set[tuple[Any, ...]]]:
        def q(sql: str) -> set[tuple[Any, ...]]:
            return {tuple(r) for r in con.execute(sql).fetchall()}

        where = " FROM entries e LEFT JOIN documents d ON d.id = e.document_id"
        return {
            "entities": q("SELECT key, name, type, mentions FROM entities"),
            "mentions": q(
                f"SELECT n.key, {_ENTRY}, m.line, m.surface, m.surface_key, m.paired,"
                " m.declared, m.created_at = e.created_at FROM mentions m"
                " JOIN entities n ON n.id = m.entity_id JOIN entries e ON e.id = m.entry_id"
                " LEFT JOIN documents d ON d.id = e.document_id"
            ),
            "relations": {  # a < b by id, which differs between stores: by key here
                (*sorted((str(a), str(b))), n)
                for a, b, n in q(
                    "SELECT x.key, y.key, r.count FROM relations r"
                    " JOIN entities x ON x.id = r.a JOIN entities y ON y.id = r.b"
                )
            },
            "links": q(
                "SELECT d.path, l.target, l.target_key, l.heading, l.alias, l.line, l.embed,"
                " l.kind FROM links l JOIN documents d ON d.id = l.document_id"
            ),
            "entries": q(
                f"SELECT {_ENTRY}, e.content, e.type, e.tags, e.heading_path, e.start_line,"
                f" e.end_line, e.props, e.expires_at{where}"
            ),
            "documents": q("SELECT path, sha256, meta FROM documents"),
            "log_marks": q(
                "SELECT d.path, x.memory_id FROM log_marks x JOIN documents d"
                " ON d.id = x.document_id"
            ),
        }

    return dict(app.store.read(read))


def rebuilt(world: World, base: Path, store: dict[str, Any]) -> dict[str, set[tuple[Any, ...]]]:
    """The tables of a new store built from the world's files and memories."""
    ws = base / "ws"
    shutil.copytree(world.ws, ws)
    app = open_app(base, ws, store, lambda: world.now, world.log)
    try:
        build(app, export(world.app))
        return tables(app)
    finally:
        app.close()


def build(app: Any, items: list[dict[str, Any]]) -> None:
    """An empty store given these memories (an import) and its workspace's notes, then
    `reindex --full`."""
    if items:
        app.memories.import_items(items)
    app.indexer.reconcile()
    entitystage.store_caught_up(app.store)
    app.notes.forget_hashes()
    app.indexer.reconcile()
    entitystage.store_caught_up(app.store)


def kinds(got: dict[str, set[Any]], want: dict[str, set[Any]]) -> set[str]:
    """What a round's differences are, by table: `mentions` (a name keyed to another entity),
    `type` (an entity's type alone), `entities` (otherwise), and any other table by name."""
    out = {name for name in want if name != "entities" and got[name] != want[name]}
    extra, missing = got["entities"] - want["entities"], want["entities"] - got["entities"]
    if extra or missing:
        typed = {(k, n, c) for k, n, _, c in extra} == {(k, n, c) for k, n, _, c in missing}
        out.add("type" if typed else "entities")
    if "relations" in out and "mentions" in out:
        out.discard("relations")  # they follow the mentions
    return out


def differences(got: dict[str, set[Any]], want: dict[str, set[Any]]) -> list[str]:
    out = []
    for name in want:
        extra, missing = got[name] - want[name], want[name] - got[name]
        for row in sorted(extra, key=repr)[:20]:
            out.append(f"  {name}: kept but not rebuilt {row}")
        for row in sorted(missing, key=repr)[:20]:
            out.append(f"  {name}: rebuilt but not kept {row}")
    return out


@contextlib.contextmanager
def stores(pg: bool, dsn: str | None) -> Iterator[Callable[[], dict[str, Any]]]:
    if not pg:
        yield dict
        return
    from bench.pgserver import Server

    server = Server(dsn)
    try:
        yield lambda: {"backend": "postgres", "dsn": server.fresh("rebuild")}
    finally:
        server.close()


def run(
    seed: int,
    rounds: int,
    ops: int = 8,
    pg: bool = False,
    dsn: str | None = None,
    say: Callable[[str], None] = print,
    log: bool = False,
    lazy: bool = False,
) -> int:
    """Rounds of `ops` operations; returns how many rounds differed from a rebuild. `lazy`:
    the notes' entities are read at each round's end only (World.lazy)."""
    failed = 0
    base = Path(tempfile.mkdtemp(prefix="entrb-", dir="/tmp"))
    try:
        with stores(pg, dsn) as new_store:
            world = World(base / "w", new_store(), random.Random(seed), log, lazy)
            try:
                done: list[str] = []
                for n in range(rounds):
                    done += [world.op() for _ in range(ops)]
                    entitystage.store_caught_up(world.app.store)
                    got, want = tables(world.app), rebuilt(world, base / f"r{n}", new_store())
                    diff = differences(got, want)
                    if diff:
                        failed += 1
                        what = ", ".join(sorted(kinds(got, want)))
                        say(f"seed {seed} round {n}: differs from a rebuild ({what}) after:")
                        say("\n".join(f"    {d}" for d in done))
                        say("\n".join(diff))
                        world.rebase(new_store())  # go on from the rebuild's state
                    done = []
            finally:
                world.app.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return failed


# -- what an edit costs: `--cost N` ------------------------------------------------------------

_LASTS = ["Fischer", "Okafor", "Patel", "Baker", "Novak", "Silva", "Tanaka", "Moreau", "Haddad"]


def workspace(ws: Path, notes: int, seed: int = 7) -> list[str]:
    """`notes` notes: 100 people's own (each titled with her full name; her first name is hers
    alone), the rest daily notes that write first names alone, and the full names of half the
    people (the other half are claimed by their own note only: an edit that drops its title
    withdraws the claim on every "Ines" of the daily notes). Returns the people's note paths."""
    from memoryd.text import entity_cues

    rng = random.Random(seed)
    firsts = sorted(k for k in entity_cues.first_names()[0] if k.isalpha() and len(k) > 3)
    people = [f"{f.title()} {_LASTS[n % len(_LASTS)]}" for n, f in enumerate(firsts[::40][:100])]
    own = []
    for n, who in enumerate(people):
        rel = f"people/{'named' if n % 2 else 'solo'}/{slug(who)}.md"  # solo: claimed by it alone
        own.append(rel)
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"# {who}\n\n{who} owns the {rng.choice(WORDS)}.\n")
    for n in range(len(people), notes):
        lines = [f"# Day {n}", ""]
        for _ in range(rng.randint(2, 6)):
            at = rng.randrange(len(people))
            who = people[at] if at % 2 and rng.random() < 0.5 else first(people[at])
            lines.append(f"{who} sent the {rng.choice(WORDS)}.")
        rel = f"daily/{n:05d}.md"
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return own


def cost(base: Path, edits: int, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Time `edits` edits of each kind on the store at `base` (made by `--cost N --dir D`):
    the note of a person only it declares edited so it still declares her (`keep`), then so
    it no longer does (`withdraw`: her first name's mentions in the daily notes given back),
    and put back (not timed: her first name taken again); a daily note edited (`daily`).
    Each is written, then synced as the watcher would (sync_paths), timed in CPU (the
    process's: the machine's load moves wall time more than the change does)."""
    import time

    ws = base / "ws"
    app = open_app(base, ws, {}, time.time)
    rng = random.Random(11)
    own = sorted(str(p.relative_to(ws)) for p in (ws / "people" / "solo").glob("*.md"))
    daily = sorted(str(p.relative_to(ws)) for p in (ws / "daily").glob("*.md"))
    times: dict[str, list[float]] = {"keep": [], "daily": [], "withdraw": []}
    try:
        for n in range(edits):
            rel = rng.choice(own)
            text = (ws / rel).read_text(encoding="utf-8")
            for kind, new in (
                ("keep", text + f"Edit {n}.\n"),
                ("withdraw", "# Notes\n\nNo one.\n"),
            ):
                started = time.process_time()
                (ws / rel).write_text(new, encoding="utf-8")
                app.indexer.sync_paths([ws / rel])
                entitystage.store_caught_up(app.store)
                times[kind].append(time.process_time() - started)
            (ws / rel).write_text(text, encoding="utf-8")
            app.indexer.sync_paths([ws / rel])
            entitystage.store_caught_up(app.store)
            rel = rng.choice(daily)
            text = (ws / rel).read_text(encoding="utf-8")
            started = time.process_time()
            (ws / rel).write_text(text + f"Someone read it {n}.\n", encoding="utf-8")
            app.indexer.sync_paths([ws / rel])
            entitystage.store_caught_up(app.store)
            times["daily"].append(time.process_time() - started)
            (ws / rel).write_text(text, encoding="utf-8")
            app.indexer.sync_paths([ws / rel])
            entitystage.store_caught_up(app.store)
    finally:
        app.close()
    out = {k: round(sorted(v)[len(v) // 2] * 1000, 2) for k, v in times.items()}
    say(f"median CPU ms per edit: {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.entity_rebuild", description=__doc__)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1, help="this many seeds from --seed on")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ops", type=int, default=8, help="operations per round")
    ap.add_argument("--pg", action="store_true")
    ap.add_argument("--dsn")
    ap.add_argument("--log", action="store_true", help="the daily log on (log_marks checked)")
    ap.add_argument(
        "--lazy", action="store_true", help="the notes' entities read at each round's end only"
    )
    ap.add_argument("--cost", type=int, help="time edits on a store of this many notes")
    ap.add_argument("--dir", help="--cost: the store (built there when it holds none)")
    ap.add_argument("--edits", type=int, default=15, help="--cost: edits of each kind")
    a = ap.parse_args(argv)
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    if a.cost:
        base = Path(a.dir or tempfile.mkdtemp(prefix="entcost-", dir="/tmp"))
        if not (base / "data").exists():  # build it: the notes (unless there), indexed
            if not (base / "ws").exists():
                (base / "ws").mkdir(parents=True)
                workspace(base / "ws", a.cost)
            app = open_app(base, base / "ws", {}, lambda: 1_800_000_000.0)
            app.indexer.reconcile()
            entitystage.store_caught_up(app.store)
            app.close()
        import json

        print(json.dumps(cost(base, a.edits, say=lambda _: None)))
        return 0
    failed = 0
    for seed in range(a.seed, a.seed + a.seeds):
        bad = run(seed, a.rounds, a.ops, a.pg, a.dsn, log=a.log, lazy=a.lazy)
        print(f"seed {seed}: {bad} of {a.rounds} rounds differ", flush=True)
        failed += bad
    print(f"{failed} rounds differ in all")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
