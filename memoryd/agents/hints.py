"""What an agent reads when a daemon call fails: the error's name and, where there is one, what
to do next (a hint names only what the MCP tools can do)."""

from __future__ import annotations

ERROR_NAMES = {
    -32602: "invalid input",
    -32004: "not found",
    -32005: "too large",
    -32006: "refused",
    -32003: "unavailable",
    -32009: "conflict",
    -32012: "store error",
    -32013: "disk full",
    -32014: "store unavailable",
    -32601: "unknown method",
}
HINTS = {
    -32009: "Read the note again (read_note), merge your change into it, and retry with the "
    "sha256 read_note returned.",
    -32601: "The running daemon is older than this MCP server: restart it (memoryd run, or "
    "systemctl --user restart memoryd).",
}
# a conflict on a memory (update with expected_updated_at), not a note
MEMORY_CONFLICT_HINT = (
    "Get the memory again (get), merge your change into it, and retry with the updated_at get "
    "returned."
)
SECRET_HINT = (
    "Leave the credential out (write a placeholder such as <API_KEY> instead) and call again: "
    "no tool stores credentials. A person who means to keep it can, with memoryctl's "
    "--allow-secrets (`memoryctl add - --allow-secrets` or `memoryctl note write PATH "
    "--allow-secrets` with the text on stdin, where other users' `ps` cannot see it)."
)
