"""memoryctl's input as text: an argument, stdin or a --file whose bytes are not all UTF-8 is
read as the daemon reads a note (memoryd/text/decoding.py): each byte that is not UTF-8 as
Windows-1252, so `café` from a Latin-1 terminal or file is `café`. A standard-library copy,
since memoryctl imports nothing of memoryd outside memoryd.ctl; tests/test_ctl.py keeps the
two equal. Imported only when such bytes are met."""

from __future__ import annotations

import codecs

LEGACY = "windows-1252"


def _legacy_bytes(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    bad = exc.object[exc.start : exc.end]
    return "".join(bytes([b]).decode(LEGACY, errors="ignore") or chr(b) for b in bad), exc.end


codecs.register_error("memoryctl-legacy", _legacy_bytes)


def decode_utf8(data: bytes) -> str:
    return data.decode("utf-8", errors="memoryctl-legacy")


def repair(text: str) -> str:
    """A str Python made of bytes that were not UTF-8 (surrogate-escaped, as in sys.argv or a
    stdin read in the C locale) as decode_utf8 reads those bytes; other text as it is (a lone
    surrogate that no byte made stays, for the daemon to refuse)."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text
    return decode_utf8(data)
