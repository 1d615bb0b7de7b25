"""Terminal escapes (bold hits, a progress line redrawn with \\r and erase-line, the daemon's
coloured log) on one rule at both doors, memoryctl's (ctl/output.py) and the daemon's
(core/logsetup.colors): only on a terminal whose TERM is set and not dumb; NO_COLOR never,
FORCE_COLOR always (colour only). TERM unset (`env -i`, cron, a service's pty) showed them as
text, as TERM=dumb would have."""

from __future__ import annotations

import io

import pytest

from memoryd.core import logsetup
from memoryd.ctl import output


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("term", "tty", "shows"),
    [
        ("xterm-256color", True, True),
        ("screen", True, True),
        (None, True, False),
        ("", True, False),
        ("dumb", True, False),
        ("xterm-256color", False, False),
    ],
)
@pytest.mark.parametrize("extra", [{}, {"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}])
def test_both_doors_show_escapes_alike(
    term: str | None,
    tty: bool,
    shows: bool,
    extra: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("TERM", "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    if term is not None:
        monkeypatch.setenv("TERM", term)
    for var, value in extra.items():
        monkeypatch.setenv(var, value)
    stream = Tty() if tty else io.StringIO()
    monkeypatch.setattr("sys.stdout", stream)
    color = False if "NO_COLOR" in extra else True if "FORCE_COLOR" in extra else shows
    assert output.use_color() is color
    assert logsetup.colors(stream) is color
    assert output.redraws(stream) is shows  # (a redraw is no colour: NO_COLOR leaves it be)
