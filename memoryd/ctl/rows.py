"""The shape of a row of the command table (ctl/table.py): `Command`, and the small helpers the
rows are written with (`arg`, `listed`, `paths_of`), apart so that other modules can hold rows
of their own (ctl/entities.py)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable
    from typing import Any


def arg(*flags: str, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    return flags, kw


class Command:
    """One row: `method` + `params` + `show` for a one-call command, or `run` for the rest.

    A listing also has `found` (did the answer list anything? if not, memoryctl exits 1, as grep
    does) and, where its items are files, `paths` (what -l/--paths prints)."""

    __slots__ = (
        "actions",
        "aliases",
        "args",
        "default",
        "examples",
        "found",
        "help",
        "method",
        "name",
        "params",
        "paths",
        "run",
        "show",
        "slow",
    )

    def __init__(
        self,
        name: str,
        help: str,
        *,
        method: str | None = None,
        params: Callable[[Namespace], dict[str, Any]] | None = None,
        show: Callable[[Any, Namespace], int] | None = None,
        run: Callable[[Any, Namespace], int] | None = None,
        args: tuple[Any, ...] = (),
        examples: tuple[str, ...] = (),
        slow: bool = False,
        aliases: tuple[str, ...] = (),
        actions: tuple[Command, ...] = (),
        default: str | None = None,
        found: Callable[[Any], bool] | None = None,
        paths: Callable[[Any], list[str]] | None = None,
    ) -> None:
        self.name, self.help, self.method, self.params = name, help, method, params
        self.show, self.run, self.args, self.examples = show, run, args, examples
        self.slow, self.aliases, self.actions, self.default = slow, aliases, actions, default
        self.found, self.paths = found, paths


def listed(key: str) -> Callable[[Any], bool]:
    """`found` for a listing whose answer holds its items under `key`."""
    return lambda res: bool(isinstance(res, dict) and res.get(key))


def paths_of(key: str, field: str = "path") -> Callable[[Any], list[str]]:
    """`paths` for a listing: each item's `field`, once, in order (items without one left out)."""

    def paths(res: Any) -> list[str]:
        items = (res.get(key) or []) if isinstance(res, dict) else []
        return list(dict.fromkeys(i[field] for i in items if isinstance(i, dict) and i.get(field)))

    return paths


def page(default: int, most: int) -> tuple[tuple[tuple[str, ...], dict[str, Any]], ...]:
    """-n and --cursor of a list that pages (links, backlinks, history: the method's bounds)."""
    return (
        arg(
            "-n",
            "--limit",
            type=int,
            metavar="N",
            help=f"at most N (default {default}, up to {most})",
        ),
        arg(
            "--cursor",
            metavar="C",
            help="start after the page that printed this cursor (its"
            " next page: ...): nothing repeated or skipped while notes or memories change",
        ),
    )


# words the table's rows share (here, beside `arg`: table.py is near its 600 lines)
TIERS = ("constitutional", "critical", "important", "normal", "temporary", "deprecated")
MODES = ("auto", "keyword", "vector", "hybrid", "fuzzy")
TIER_HELP = "lifecycle tier: " + ", ".join(TIERS)
PROMOTE = arg(
    "--tier",
    choices=TIERS,
    default="critical",
    metavar="TIER",
    help=TIER_HELP + " (default critical)",
)
LIMIT = "at most N hits (default search.default_limit, 10)"
MODE = "default auto: the best ready (hybrid once embedded)"
SESSION_TOKENS = "token budget (default lifecycle.session_max_tokens, 500)"
CHECKPOINT = "the checkpoint's name"
NOTE_HELP = "a workspace-relative path, or a note's name as a wikilink names it"
NOTE_PATH = arg("path", metavar="PATH", help="the note, relative to the workspace")
PATHS = arg(
    "-l",
    "--paths",
    action="store_true",
    help="print only the paths of the notes found, one per line (like rg -l)",
)
