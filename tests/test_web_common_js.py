"""The pages' shared script (static/common.js) run in node with a stub document and fetch:
what a page says when its request fails. Skips, saying why, without node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parent.parent / "memoryd" / "web" / "static"
NODE = shutil.which("node") or shutil.which("nodejs")

RUN = """
const fs = require("fs"), vm = require("vm");
globalThis.document = {
  querySelector: () => ({ content: "csrf" }), querySelectorAll: () => [],
  body: { dataset: {} },
};
const page = vm.runInThisContext(fs.readFileSync(process.argv[1] + "/common.js", "utf8") + ";M");
const cases = {
  // what fetch does when nothing listens at the page's address (daemon stopped or moved)
  gone: () => Promise.reject(new TypeError("Failed to fetch")),
  aborted: () => Promise.reject(Object.assign(new Error("aborted"), { name: "AbortError" })),
  signedout: () => Promise.resolve(new Response(
    JSON.stringify({ error: { code: -32006, message: "not signed in: run memoryctl open" } }),
    { status: 401, statusText: "Unauthorized" })),
};
(async () => {
  const out = {};
  for (const [name, fake] of Object.entries(cases)) {
    globalThis.fetch = fake;
    for (const how of ["get", "post"]) {
      try { await (how === "get" ? page.get("/api/status") : page.post("/api/memory/delete", {})); }
      catch (err) {
        out[`${name}-${how}`] = { name: err.name, message: err.message, status: err.status };
      }
    }
  }
  process.stdout.write(JSON.stringify(out));
})();
"""


def run() -> dict[str, dict[str, str]]:
    if NODE is None:
        pytest.skip("no node to run the page's script in (apt-get install nodejs)")
    out = subprocess.run(
        [NODE, "-e", RUN, str(STATIC)], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_a_page_whose_daemon_is_gone_says_what_to_do() -> None:
    """main showed the browser's words, `Failed to fetch` (Firefox: `NetworkError when
    attempting to fetch resource.`), when the daemon had stopped or come back on another port."""
    out = run()
    for how in ("get", "post"):
        message = out[f"gone-{how}"]["message"]
        assert "daemon stopped, or restarted" in message and "memoryctl open" in message
        assert "Failed to fetch" not in message
        assert out[f"aborted-{how}"]["name"] == "AbortError"  # search's own abort stays quiet
        assert out[f"signedout-{how}"] == {
            "name": "Error",
            "message": "not signed in: run memoryctl open",
            "status": 401,
        }
