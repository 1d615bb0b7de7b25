"""The page's routes as a table: method, path, what answers, and what the request must carry.

Pages are one HTML shell each (static/shell.html filled in with string.Template: the page's
name, title and the session's CSRF token, all escaped); the page's script then asks the JSON
routes. Every route but /login needs a session (or the bearer token); every POST needs the
session's CSRF token too."""

from __future__ import annotations

import html
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd import __version__
from memoryd.web import actions
from memoryd.web.http import Response

STATIC = Path(__file__).resolve().parent / "static"
TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}
VENDOR = {
    "note": ("vendor/markdown-it.min.js", "vendor/purify.min.js", "notemd.js"),
    "graph": ("vendor/cytoscape.min.js",),
}
PAGES = {
    "search": "Search",
    "note": "Note",
    "memories": "Memories",
    "graph": "Graph",
    "entities": "Entities",
    "status": "Status",
}


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    fn: Callable[[actions.Context, Any], Any]
    write: bool = False


ROUTES: dict[tuple[str, str], Route] = {
    (r.method, r.path): r
    for r in [
        Route("GET", "/api/search", actions.search),
        Route("GET", "/api/memories", actions.memories),
        Route("GET", "/api/memory", actions.memory),
        Route("GET", "/api/facets", actions.facets),
        Route("GET", "/api/note", actions.note),
        Route("GET", "/api/backlinks", actions.backlinks),
        Route("GET", "/api/notes", actions.notes),
        Route("GET", "/api/graph", actions.graph),
        Route("GET", "/api/entities", actions.entities),
        Route("GET", "/api/entity", actions.entity),
        Route("GET", "/api/related", actions.related),
        Route("GET", "/api/status", actions.status),
        Route("GET", "/api/trash", actions.trash),
        Route("POST", "/api/memory/update", actions.memory_update, write=True),
        Route("POST", "/api/memory/validate", actions.memory_validate, write=True),
        Route("POST", "/api/memory/tier", actions.memory_tier, write=True),
        Route("POST", "/api/memory/delete", actions.memory_delete, write=True),
        Route("POST", "/api/trash/restore", actions.trash_restore, write=True),
    ]
}


def load_static() -> dict[str, tuple[bytes, str]]:
    """Every file under static/ by its URL path, read once: a request can name only these."""
    out = {}
    for path in sorted(STATIC.rglob("*")):
        if path.is_file() and path.suffix in TYPES and path.name != "shell.html":
            url = "/static/" + path.relative_to(STATIC).as_posix()
            out[url] = (path.read_bytes(), TYPES[path.suffix])
    return out


class Shell:
    """The pages' HTML, one template for all."""

    def __init__(self) -> None:
        self.template = string.Template((STATIC / "shell.html").read_text(encoding="utf-8"))

    def render(self, page: str, csrf: str) -> Response:
        body = self.template.substitute(
            page=page,
            title=html.escape(PAGES[page]),
            csrf=html.escape(csrf, quote=True),
            version=html.escape(__version__),
            scripts="\n".join(
                f'<script src="/static/{name}" defer></script>'
                for name in (*VENDOR.get(page, ()), "common.js", f"{page}.js")
            ),
        )
        return Response(200, body.encode(), TYPES[".html"])


def signed_out() -> Response:
    """A page asked for without a session: say how to get one."""
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>memoryd</title>"
        "</head><body><main class='signin'>"
        "<h1>memoryd</h1><p>This page is for the user who runs memoryd. Open it with "
        "<code>memoryctl open</code>: it prints a link that signs this browser in once.</p>"
        "</main></body></html>"
    )
    return Response(401, body.encode(), TYPES[".html"])
