"""After a reload, `status` says which configuration file the daemon runs with and which of its
changed settings wait for a restart (the log said so once; `memoryctl status` is where a person
looks)."""

from __future__ import annotations

import signal
from typing import Any

from conftest import wait_for

from memoryd.ctl.output import status_summary


def test_status_names_the_file_and_the_settings_waiting_for_a_restart(
    daemon_factory: Any,
) -> None:
    d = daemon_factory()
    status = d.call("status")
    assert status["config"] == {"file": str(d.config_path), "restart_needed": []}
    text = d.config_path.read_text()
    d.config_path.write_text(
        text + "\n[server]\nmax_connections = 7\n[search]\ndefault_limit = 3\n"
    )
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    waiting = wait_for(lambda: d.call("status")["config"]["restart_needed"] or None, timeout=30)
    assert waiting == ["server.max_connections"]  # search.default_limit applied at once
    summary = status_summary(d.call("status"))
    assert "needs attention: restart to apply server.max_connections" in summary, summary
    d.config_path.write_text(text)  # changed back: nothing waits any more
    d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: d.call("status")["config"]["restart_needed"] == [], timeout=30)
