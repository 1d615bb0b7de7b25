"""A note's bytes as text: UTF-8, or UTF-8/16/32 as a byte order mark says; in UTF-8 text each
byte that is not UTF-8 is read as Windows-1252 (Latin-1 with printable 0x80-0x9F), as an older
editor on Windows or a Latin-1 system wrote it, the five bytes Windows-1252 leaves undefined as
Latin-1's. One rule for every reader: the indexer, note.read (and through it the MCP tools and
the web page), note.append (which writes in the note's own encoding); memoryctl reads its
input the same way (memoryd/ctl/textin.py, a standard-library copy a test keeps equal)."""

from __future__ import annotations

import codecs

LEGACY = "windows-1252"


def _legacy_bytes(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    bad = exc.object[exc.start : exc.end]
    return "".join(bytes([b]).decode(LEGACY, errors="ignore") or chr(b) for b in bad), exc.end


codecs.register_error("memoryd-legacy", _legacy_bytes)


def decode_utf8(data: bytes) -> tuple[str, bool]:
    """(text, whether some bytes were not UTF-8 and were read as Windows-1252)."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="memoryd-legacy"), True


_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),  # before UTF-16 LE, whose BOM it starts with
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)


def bom(data: bytes) -> tuple[str, int]:
    """(encoding, length of its byte order mark) as the first bytes of a file announce it;
    ("utf-8", 0) without a mark."""
    for mark, name in _BOMS:
        if data.startswith(mark):
            return name, len(mark)
    return "utf-8", 0


def decode(data: bytes) -> tuple[str, str, bool]:
    """(text, encoding, lossy): UTF-8, or UTF-8/16/32 as announced by a byte order mark (the
    mark is dropped). In UTF-8 text, bytes that are not UTF-8 are read as Windows-1252
    (`café` written in Latin-1 stays `café`, valid UTF-8 around it stays as it is): encoding
    is then "utf-8+windows-1252". Undecodable UTF-16/32 becomes U+FFFD and sets `lossy`."""
    encoding, start = bom(data)
    payload = data[start:]
    if encoding == "utf-8":
        text, legacy = decode_utf8(payload)
        return text, f"utf-8+{LEGACY}" if legacy else encoding, False
    try:
        return payload.decode(encoding), encoding, False
    except UnicodeDecodeError:
        return payload.decode(encoding, errors="replace"), encoding, True


def encode_like(text: str, encoding: str) -> bytes:
    """Text to add to a note whose bytes decode() read as `encoding`: in the note's own UTF-16
    or UTF-32 (without a second byte order mark), else UTF-8."""
    if encoding.startswith(("utf-16", "utf-32")):
        return text.encode(encoding)  # the -le/-be codecs write no byte order mark
    return text.encode("utf-8")
