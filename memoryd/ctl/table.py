"""The command table: every memoryctl command as data (name, method, params, printer, options).

`parser.build_parser(only)` turns the table into argparse parsers (only the one in use).
"""

from __future__ import annotations

from memoryd.ctl import admin as ad
from memoryd.ctl import entities as en
from memoryd.ctl import handlers as h
from memoryd.ctl import rows as rw
from memoryd.ctl import webopen as wo
from memoryd.ctl.rows import PATHS, Command, arg, listed, paths_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

TIERS = rw.TIERS
WHEN_HELP = (
    "a duration back (90m, 24h, 7d), an ISO 8601 date or time, a year or month, or unix time"
)


FILTERS = (
    "filters",
    (
        arg(
            "--kind",
            choices=["memory", "chunk", "all", "entity"],
            help="memories or file chunks (default: list memory, search all; search: entity "
            "finds entities by name)",
        ),
        arg(
            "--entity",
            action="append",
            metavar="NAME",
            help="only entries that mention NAME (repeat: all of them)",
        ),
        arg("--type", help="only this type (a,b for several)"),
        arg("--tags", help="only entries carrying all of these tags (a,b)"),
        arg("--source", help="only this source"),
        arg("--path", metavar="PREFIX", help="only chunks of files under this path"),
        arg("--since", type=h.when, metavar="WHEN", help=f"created at or after: {WHEN_HELP}"),
        arg(
            "--until",
            type=h.when,
            metavar="WHEN",
            help="created before (a date: up to the end of that day)",
        ),
        arg("--min-importance", type=int, metavar="N", help="importance at least N"),
        arg("--include-expired", action="store_true", help="expired memories too"),
        arg("--namespace", metavar="NS", help="only this namespace ('*' for all)"),
        arg("--tier", help="only these tiers (a,b)"),
        arg("--include-deprecated", action="store_true", help="deprecated memories too"),
    ),
)


def memory_options(update: bool = False) -> tuple[Any, ...]:
    expiry = [
        arg("--ttl", help="expire after this long: 30m, 12h, 7d, or seconds"),
        arg("--expires", metavar="TIME", help="expire at (ISO 8601 or unix time)"),
    ]
    if update:
        expiry.append(arg("--no-expiry", action="store_true", help="never expire"))
    return (
        arg("--type", help="fact, preference, decision, ... (default fact)"),
        arg("--tags", help="comma separated tags" + (" (replaces them)" if update else "")),
        arg("--importance", type=int, metavar="N", help="1-10 (default 5)"),
        arg("--confidence", type=h.finite, metavar="F", help="0-1 (default 1)"),
        arg("--source", help="who or what said it"),
        arg("--context", help="free text context"),
        ("exclusive", tuple(expiry)),
        arg("--tier", choices=TIERS, metavar="TIER", help=f"{rw.TIER_HELP} (default normal)"),
        arg("--triggers", help="comma separated phrases that recall this memory"),
        arg(
            "--allow-secrets",
            action="store_true",
            help="store it even if it looks like a credential",
        ),
    )


ID = arg("id", type=int, metavar="ID", help="the memory's id (as list and search show it)")
NS = arg("--namespace", metavar="NS", help="default: memories.default_namespace")
SNAPSHOT = arg(
    "--snapshot",
    action="store_true",
    help="a scheduled snapshot (<data_dir>/snapshots/), not a checkpoint",
)
NOTE_SECRETS = arg(
    "--allow-secrets",
    action="store_true",
    help="write it even if it looks like a credential",
)
CURSOR_HELP = (
    "start after the page that printed this cursor (its next page: ...), with the same "
    "filters: nothing repeated or skipped while entries are added or deleted"
)
IF_SHA = arg("--if-sha256", metavar="SHA", help="only if the note is still at this sha256")
NOTE_TEXT = (
    arg("text", nargs="?", metavar="TEXT", help="the text (default: read stdin; - = stdin)"),
    arg("--file", metavar="FILE", help="read the text from FILE"),
)

COMMANDS: tuple[Command, ...] = (
    Command(
        "add",
        "store a memory (TEXT, or - to read it from stdin)",
        method="add",
        params=h.p_add,
        show=h.s_add,
        args=(
            arg("text", metavar="TEXT", help="the memory; - reads it from stdin"),
            *memory_options(),
            arg("--namespace", metavar="NS", help="agent or project namespace"),
            arg(
                "--skip-near-duplicates",
                action="store_true",
                help="do not store it when a nearly identical memory exists",
            ),
        ),
        examples=(
            'memoryctl add "Deploys go out on Tuesdays" --type fact --tags ops',
            "git log -1 --format=%B | memoryctl add - --source git --ttl 30d",
        ),
    ),
    Command(
        "search",
        "search memories and notes by keyword and meaning",
        method="search",
        params=h.p_search,
        show=h.s_search,
        found=h.search_found,
        paths=h.search_paths,
        args=(
            arg(
                "query",
                metavar="QUERY",
                nargs="?",
                help='words, "a phrase", pre*, a OR b; - reads it from stdin',
            ),
            PATHS,
            arg("-n", "--limit", type=int, metavar="N", help=rw.LIMIT),
            arg("--mode", choices=rw.MODES, help=rw.MODE),
            arg(
                "--chunks",
                action="store_true",
                help="one hit per matching section (default: one per note, best section first)",
            ),
            arg("--explain", action="store_true", help="show each ranking component"),
            arg("--concepts", help="2-5 comma separated concepts that must all match"),
            arg(
                "--max-tokens",
                type=int,
                metavar="N",
                help="full details for the hits that fit "
                "in N tokens, a line for the rest (default: no budget)",
            ),
            arg(
                "--constitutional",
                action="store_true",
                help="put the constitutional memories first",
            ),
            arg("--no-decay", action="store_true", help="rank without age decay"),
            arg(
                "--all-workspaces",
                action="store_true",
                help="every workspace's notes on a shared PostgreSQL store (default: this one's)",
            ),
            FILTERS,
        ),
        examples=(
            'memoryctl search "how do we deploy?"',
            "memoryctl search auth --kind chunk --path projects/api -n 5",
            'memoryctl search "postgres OR mysql" --mode keyword --explain',
            "memoryctl search -- '-draft notes'    # a query that starts with '-'",
        ),
    ),
    Command(
        "get",
        "show one memory or chunk",
        method="get",
        params=h.by_id,
        show=h.s_get,
        args=(ID,),
        examples=("memoryctl get 42",),
    ),
    Command(
        "list",
        "list memories, newest first (--kind all for file chunks too)",
        method="list",
        params=h.p_list,
        show=h.s_list,
        found=listed("items"),
        paths=paths_of("items"),
        args=(
            PATHS,
            FILTERS,
            arg("-n", "--limit", type=int, default=20, metavar="N", help="default 20"),
            arg("--offset", type=int, default=0, metavar="N", help="skip the first N"),
            arg("--cursor", metavar="C", help=CURSOR_HELP),
        ),
        examples=(
            "memoryctl list --type decision --since 2026-01-01",
            "memoryctl list --kind chunk --path notes -n 50 --offset 50",
            "memoryctl list -n 50 --cursor 1795765762.9921:12",
        ),
    ),
    Command(
        "update",
        "change a memory's content or fields",
        method="update",
        params=h.p_update,
        show=h.s_update,
        args=(
            ID,
            arg("--content", help="new text (- reads stdin)"),
            *memory_options(update=True),
            arg(
                "--if-updated",
                metavar="AT",
                help="only if the memory is still at this updated_at (as get --json shows it)",
            ),
        ),
        examples=(
            "memoryctl update 42 --importance 8 --tags db,arch",
            "memoryctl update 42 --no-expiry",
        ),
    ),
    Command(
        "delete",
        "delete memories by id, or by tag, namespace or workspace path",
        run=h.r_delete,
        aliases=("rm",),
        args=(
            arg("ids", type=int, nargs="*", metavar="ID", help="memory ids"),
            arg("--tag", help="every memory with this tag"),
            arg("--namespace", metavar="NS", help="every memory in this namespace"),
            arg("--path", help="a workspace file or folder (moved to the trash)"),
            IF_SHA,
            arg("--dry-run", action="store_true", help="only say what would go"),
        ),
        examples=("memoryctl rm 41 42", "memoryctl delete --tag scratch --dry-run"),
    ),
    Command(
        "stats",
        "counts: memories, files, chunks, vectors, by type",
        method="stats",
        params=h.p_namespace,
        show=h.s_rows,
        args=(arg("--namespace", metavar="NS", help="count only this namespace's memories"),),
    ),
    Command(
        "status",
        "daemon health; --check compares the index with the files on disk; --watch "
        "follows indexing and embedding until they are done",
        run=ad.r_status,
        args=(
            arg("--check", action="store_true", help="list drift; exit 1 when there is any"),
            arg("--watch", action="store_true", help="a progress bar until the work is done"),
            arg(
                "--interval",
                type=h.interval,
                default=1.0,
                metavar="S",
                help="seconds between polls with --watch (default 1)",
            ),
        ),
        examples=(
            "memoryctl status",
            'memoryctl status --check || echo "index drifted"',
            "memoryctl status --watch",
        ),
    ),
    Command(
        "reindex",
        "re-scan the workspace (or one file or folder), with a progress bar",
        run=ad.r_reindex,
        slow=True,
        args=(
            arg("path", nargs="?", metavar="PATH", help="workspace-relative file or folder"),
            arg(
                "--full",
                action="store_true",
                help="re-read and re-chunk every file (under PATH, with one)",
            ),
            arg("--no-progress", action="store_true", help="print only the result"),
        ),
        examples=("memoryctl reindex", "memoryctl reindex notes/projects --full"),
    ),
    Command("ping", "check that the daemon answers", run=ad.r_ping),
    Command(
        "open",
        "open the web page in the browser (starts it; a one-time sign-in link)",
        run=wo.r_open,
        args=(
            arg("page", nargs="?", choices=wo.PAGES, help="the page (default: search)"),
            arg(
                "path",
                nargs="?",
                metavar="NOTE",
                help="for note and graph: the note; for entities: an entity's name",
            ),
            arg("--no-browser", action="store_true", help="only print the link"),
        ),
        examples=(
            "memoryctl open",
            "memoryctl open graph projects/api.md",
            "memoryctl open entities Caroline",
        ),
    ),
    Command(
        "jobs",
        "scheduled jobs with their last and next run; `jobs run NAME` runs one now",
        default="list",
        actions=(
            Command("list", "list the jobs (the default)", method="jobs", show=ad.s_jobs),
            Command(
                "run",
                "run a job now and wait for it",
                run=ad.r_jobs_run,
                slow=True,
                args=(arg("name", metavar="NAME", help="the job (memoryctl jobs lists them)"),),
            ),
        ),
        examples=("memoryctl jobs", "memoryctl jobs run reconcile"),
    ),
    Command(
        "prune",
        "remove expired and deprecated memories",
        method="prune",
        params=h.p_dry_run,
        show=h.s_prune,
        args=(arg("--dry-run", action="store_true", help="only say what would go"),),
        examples=("memoryctl prune --dry-run",),
    ),
    Command(
        "session",
        "the constitutional memories, within a token budget",
        method="session_start",
        params=h.p_session,
        show=h.s_session,
        args=(arg("--max-tokens", type=int, metavar="N", help=rw.SESSION_TOKENS), NS),
        examples=("memoryctl session --max-tokens 600 --namespace claude",),
    ),
    Command(
        "triggers",
        "memories whose trigger phrases occur in PROMPT (- = stdin)",
        method="match_triggers",
        params=h.p_triggers,
        show=h.s_triggers,
        found=listed("memories"),
        args=(arg("prompt", metavar="PROMPT", help="the text to look in"), NS),
        examples=('echo "$PROMPT" | memoryctl triggers -',),
    ),
    Command(
        "validate",
        "record that a memory was useful (or --not-useful)",
        method="validate",
        params=h.p_validate,
        show=h.s_validate,
        args=(ID, arg("--not-useful", action="store_true", help="it was not useful")),
        examples=("memoryctl validate 42 --not-useful",),
    ),
    Command(
        "candidates",
        "memories validated useful often enough to promote",
        method="promotion_candidates",
        params=h.p_page,
        show=h.s_candidates,
        found=listed("candidates"),
        args=rw.page(100, 1000),
    ),
    Command(
        "promote",
        "raise a memory's tier (default critical)",
        method="promote",
        params=h.p_promote,
        show=h.s_promote,
        args=(ID, rw.PROMOTE),
        examples=("memoryctl promote 42 --tier constitutional",),
    ),
    Command(
        "history",
        "every recorded change of a memory, with old and new values",
        method="history",
        params=h.p_history,
        show=h.s_history,
        found=listed("history"),
        args=(ID, *rw.page(100, 1000)),
    ),
    Command(
        "used",
        "record that a memory was really used (counts as an access)",
        method="used",
        params=h.by_id,
        show=h.s_used,
        args=(ID,),
        examples=("memoryctl used 42",),
    ),
    Command(
        "recent",
        "recent memories and recently changed notes, newest first",
        method="recent_activity",
        params=h.p_recent,
        show=h.s_recent,
        found=listed("items"),
        paths=paths_of("items"),
        args=(
            PATHS,
            arg("-n", "--limit", type=int, metavar="N", help="at most N (default 20)"),
            arg("--since", type=h.when, metavar="WHEN", help=WHEN_HELP),
            NS,
        ),
        examples=("memoryctl recent -n 10", "memoryctl recent --since 2d"),
    ),
    Command(
        "checkpoint",
        "create, list, restore or delete a snapshot of the whole store",
        default="list",
        actions=(
            Command(
                "create",
                "snapshot the store",
                method="checkpoint.create",
                params=ad.p_name,
                show=h.s_rows,
                slow=True,
                args=(arg("name", metavar="NAME", help=rw.CHECKPOINT),),
            ),
            Command(
                "restore",
                "go back to one (or with --snapshot to a scheduled snapshot)",
                method="checkpoint.restore",
                params=ad.p_checkpoint_delete,
                show=h.s_rows,
                slow=True,
                args=(arg("name", metavar="NAME", help=rw.CHECKPOINT), SNAPSHOT),
            ),
            Command(
                "list",
                "list the checkpoints (the default; with --snapshot the scheduled snapshots)",
                method="checkpoint.list",
                params=ad.p_kind,
                show=ad.s_checkpoints,
                found=listed("checkpoints"),
                args=(SNAPSHOT,),
            ),
            Command(
                "delete",
                "remove a checkpoint (or with --snapshot a scheduled snapshot)",
                method="checkpoint.delete",
                params=ad.p_checkpoint_delete,
                show=ad.s_checkpoint_delete,
                args=(arg("name", metavar="NAME", help=rw.CHECKPOINT), SNAPSHOT),
            ),
        ),
        examples=(
            "memoryctl checkpoint create before-cleanup",
            "memoryctl checkpoint restore before-cleanup",
            "memoryctl checkpoint delete before-cleanup",
            "memoryctl checkpoint list --snapshot",
            "memoryctl checkpoint restore --snapshot memoryd-20261126T030000Z",
        ),
    ),
    Command(
        "export",
        "memories as JSON lines (stdout or -o FILE, written 0600)",
        run=ad.r_export,
        slow=True,
        args=(
            arg("-o", "--output", metavar="FILE", help="write FILE (default: stdout)"),
            NS,
            arg("--vectors", action="store_true", help="include the vectors"),
        ),
        examples=("memoryctl export -o memories.jsonl",),
    ),
    Command(
        "import",
        "import JSON lines from FILE (- = stdin), all or nothing; skips memories already stored",
        run=ad.r_import,
        slow=True,
        args=(
            arg("file", metavar="FILE", help="JSON lines, as export writes them"),
            arg(
                "--allow-secrets",
                action="store_true",
                help="import memories even if they look like credentials",
            ),
        ),
        examples=("memoryctl import memories.jsonl",),
    ),
    Command(
        "note",
        "read, write, append to, list or move workspace notes",
        actions=(
            Command(
                "read",
                "print a note",
                method="note.read",
                params=ad.p_path,
                show=ad.s_note_read,
                args=(rw.NOTE_PATH,),
            ),
            Command(
                "write",
                "create or replace a note with TEXT (or stdin, or --file)",
                method="note.write",
                params=ad.p_note_write,
                show=ad.s_note_write,
                args=(rw.NOTE_PATH, *NOTE_TEXT, IF_SHA, NOTE_SECRETS),
            ),
            Command(
                "append",
                "add TEXT (or stdin, or --file) at the end of a note",
                method="note.append",
                params=ad.p_note_write,
                show=ad.s_note_append,
                args=(rw.NOTE_PATH, *NOTE_TEXT, IF_SHA, NOTE_SECRETS),
            ),
            Command(
                "list",
                "notes under PATH (default: all)",
                method="note.list",
                params=ad.p_note_list,
                show=ad.s_note_list,
                found=listed("items"),
                paths=paths_of("items"),
                args=(
                    PATHS,
                    arg("path", nargs="?", metavar="PATH", help="a folder (default: all)"),
                    arg("-n", "--limit", type=int, metavar="N", help="at most N (default 50)"),
                    arg("--offset", type=int, metavar="N", help="skip the first N"),
                    arg("--cursor", metavar="C", help=CURSOR_HELP),
                ),
            ),
            Command(
                "move",
                "rename or move a note",
                method="note.move",
                params=ad.p_note_move,
                show=ad.s_note_move,
                args=(rw.NOTE_PATH, arg("new_path", metavar="NEW_PATH", help="where to"), IF_SHA),
            ),
        ),
        examples=(
            "memoryctl note read projects/api.md",
            "echo '- shipped' | memoryctl note append log.md",
            "memoryctl note move draft.md archive/draft.md",
        ),
    ),
    Command(
        "links",
        "the links in NOTE and where they lead",
        method="links",
        params=ad.p_link_page,
        show=ad.s_links,
        found=listed("links"),
        paths=paths_of("links"),
        args=(arg("path", metavar="NOTE", help=rw.NOTE_HELP), PATHS, *rw.page(500, 5000)),
        examples=("memoryctl links projects/api.md",),
    ),
    Command(
        "backlinks",
        "the notes that link to NOTE",
        method="backlinks",
        params=ad.p_link_page,
        show=ad.s_backlinks,
        found=listed("backlinks"),
        paths=paths_of("backlinks"),
        args=(arg("path", metavar="NOTE", help=rw.NOTE_HELP), PATHS, *rw.page(500, 5000)),
        examples=("memoryctl backlinks projects/api.md",),
    ),
)

COMMANDS += en.COMMANDS

BY_NAME = {n: c for c in COMMANDS for n in (c.name, *c.aliases)}


def resolve(a: Namespace) -> Command | None:
    """The row to run: the command's, or its action's (or its default action's)."""
    cmd: Command | None = getattr(a, "command_row", None)
    if cmd is None or not cmd.actions:
        return cmd
    # an action's own set_defaults replaced command_row when an action was given
    if cmd.default is not None and getattr(a, "action", None) is None:
        return next(x for x in cmd.actions if x.name == cmd.default)
    return cmd
