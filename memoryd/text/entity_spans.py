"""Entity extraction, first pass (memoryd/text/entities.py has the rules): the canonical key,
and the entities that are not capitalised names, found in one line and blanked out before names
are read: wikilinks and their aliases, URL hosts, emails, @mentions, #tags, CJK terms in
brackets or quotes or before an honorific, Title Case titles in quotes, hostnames, and code
identifiers (also those inside `inline code`). Pure functions of strings.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from memoryd.text import entity_cues as cues
from memoryd.text.entity_cues import IDENTIFIER, OTHER, PERSON, SYSTEM, TAG
from memoryd.text.mdblocks import TAG_BODY


@dataclass(slots=True)
class Raw:
    key: str
    surface: str
    name: str
    line: int
    source: str
    votes: dict[str, float] = field(default_factory=dict)
    alias_to: str | None = None


_STRIP = " \t\"'`*()[]{}<>.,;:!?“”‘’「」【】《》"
POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])$", re.IGNORECASE)


def _fold(ch: str) -> str:
    d = unicodedata.normalize("NFKD", ch)
    if len(d) > 1 and d[0].isascii() and all(unicodedata.combining(c) for c in d[1:]):
        return d[0]
    return ch


@lru_cache(maxsize=65536)
def canonical_key(name: str) -> str:
    """'Mélanie's' -> 'melanie'; '#Billing' -> '#billing'; '@caro' -> 'caro'."""
    if name.isascii() and name.replace(" ", "").isalnum():  # what the rest leaves as it is
        return " ".join(name.lower().split())  # but for case and spaces: two names in three
    s = unicodedata.normalize("NFKC", name).strip(_STRIP).lstrip("@")
    s = POSSESSIVE.sub("", s).strip(_STRIP)
    s = "".join(_fold(c) for c in s) if not s.isascii() else s
    return " ".join(s.casefold().split())


@lru_cache(maxsize=65536)
def display_name(surface: str) -> str:
    """The surface without possessive and surrounding punctuation: "Melanie's" -> "Melanie"."""
    if surface.isascii() and surface.replace(" ", "").isalnum():
        return " ".join(surface.split())
    s = unicodedata.normalize("NFKC", surface).strip(_STRIP).lstrip("@")
    return " ".join(POSSESSIVE.sub("", s).strip(_STRIP).split())


# --- explicit and code-shaped entities, found before names and blanked out -------------------

TICKS = re.compile(r"(`+)(.+?)\1")
WIKI = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
# A URL does not take the sentence's last stop or comma with it ("see https://x.io/a. Ping").
_URL = re.compile(r"\b(?:https?|ftp|wss?)://([^\s/?#<>()\[\]\"'`]+)[^\s<>()\[\]\"'`]*(?<![.,;:!?])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@(?:[\w-]+\.)+[A-Za-z]{2,}\b")
_AT = re.compile(r"(?<![\w@.])@([A-Za-z][\w.-]*[A-Za-z0-9_])")
# A pattern that opens with what it looks behind at is tried at every position; these open with
# the character or the set the match starts with (which re scans for), then look behind past it.
_TAG = re.compile(r"#(?<!\S.)(" + TAG_BODY + ")")  # after a space; the tags' grammar
_HOST = re.compile(r"(?<![\w@/.-])([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9-]+)+)(?![\w-]|\.\w)")
_SNAKE = re.compile(r"(?<![\w-])[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_?(?:\(\))?(?![\w-])")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\(\)")
_CAMEL = re.compile(r"(?<![\w-])[a-z]+(?:[A-Z][a-z0-9]*)+(?![\w-])")
_KEBAB = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w-])")
_MIXED = re.compile(r"(?<![\w-])(?=[\w-]*\d)[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*(?![\w-])")
_CODE_WORD = re.compile(r"^[A-Za-z_][\w.-]*[A-Za-z0-9_]$")
_DOTTED_NAME = re.compile(
    r"[A-Z](?<![\w.].)[A-Za-z0-9]*\.(?:js|JS|ts|NET|io|IO|ai|py|rb|rs|jl)(?!\w|\.\w)"
)
_QUOTED = re.compile(r"[\"“]([A-Z][^\"”\n]{2,80})[\"”]")
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
HAS_CJK = re.compile(f"[{_CJK}]").search
_BRACKET = re.compile(r"[「【《“\"]([^」】》”\"\n]{1,24})[」】》”\"]")
_CJK_HONORIFIC = re.compile(
    rf"(?<![{_CJK}])([\u4e00-\u9fff]{{2,3}}|[\u30a1-\u30fa\u30fc]{{2,8}})"
    rf"(?={'|'.join(cues.CJK_HONORIFICS)})"
)
_TLDS = cues.words("com org net io dev app ai co eu us uk de fr jp cn internal local lan corp")
_INFRA = cues.words(
    "svc api srv db ctl io ui app web bot cli sdk gw lb proxy worker service server queue "
    "cron job jobs cache redis pg sql etl ingest exporter agent daemon"
)
_FILE_EXT = cues.words("py md toml json txt yaml yml sh js ts go rs sql log conf csv ini cfg")


# Which kinds of span a line can hold, one bit each: line_shapes() tests a whole text once
# (each pattern starts with a literal or a small set, which re scans for quickly, then looks
# behind; ".*" takes the rest of the line, so a line matches once), and explicit() runs the
# patterns a line's bits allow. Blanking only writes spaces, so a line never gains a shape.
WIKI_B, URL_B, AT_B, TAG_B, QUOTE_B, CJK_B, TICK_B = 1, 2, 4, 8, 16, 32, 64
DOT_B, SNAKE_B, CALL_B, CAMEL_B, HYPHEN_B, DIGIT_B = 128, 256, 512, 1024, 2048, 4096
ANY_SHAPE = 8191
_GATES = (  # (a literal every match holds, the gate, its bit): a match implies a gate match
    ("[[", re.compile(r"\[\[.*"), WIKI_B),
    ("://", re.compile(r"://.*"), URL_B),
    ("@", re.compile(r"@.*"), AT_B),
    ("#", re.compile(r"#[^\s#].*"), TAG_B),
    ('"', re.compile(r'"[A-Z].*'), QUOTE_B),  # two literals: 1/8 the time of one ["“] gate
    ("“", re.compile(r"“[A-Z].*"), QUOTE_B),
    ("`", re.compile(r"`.*"), TICK_B),
    (".", re.compile(r"\.(?<=[a-z0-9]\.)[a-z0-9-].*"), DOT_B),  # host.name
    ("_", re.compile(r"_[A-Za-z0-9].*"), SNAKE_B),
    ("()", re.compile(r"\(\).*"), CALL_B),
    ("-", re.compile(r"-(?<=[a-z0-9]-)[a-z0-9].*"), HYPHEN_B),  # kebab-case
)
# Two gates are a pair of adjacent characters of two ASCII classes, which a pattern can only
# find by trying every capital or digit: they are found as two bytes in the text mapped one byte
# a character (bytes.translate: each letter and digit to its class; "-" and the rest stay).
# CAMEL_B: a lower-case letter then an upper-case one; DIGIT_B: a letter or "-" then a digit
# (the first digit of SEV2, build-7).
_LOWER, _UPPER = b"abcdefghijklmnopqrstuvwxyz", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_CLASSES = bytes.maketrans(_LOWER + _UPPER + b"0123456789", b"a" * 26 + b"A" * 26 + b"0" * 10)
_PAIR_GATES = ((b"aA", CAMEL_B), (b"a0", DIGIT_B), (b"A0", DIGIT_B), (b"-0", DIGIT_B))
_CJK_LINE = re.compile(f"[{_CJK}].*")
# Where a pattern can first match in a line: each of its matches holds two characters its gate
# finds (a dot between host labels, "_x", "aB", a hyphen between kebab words, a digit after a
# letter or "-") and starts where a run of the characters it may follow ends, so none starts
# before the run that holds the line's first gate match (_first_run). (gate, the run's
# characters but letters and digits); a pattern that opens with what it looks behind at tries
# every position, so this saves the positions before.
_HOST_FROM = (re.compile(r"\.(?<=[a-z0-9]\.)[a-z0-9-]").search, "_@/.-")
_SNAKE_FROM = (re.compile(r"_[A-Za-z0-9]").search, "_-")
_CAMEL_FROM = (re.compile(r"[A-Z](?<=[a-z][A-Z])").search, "_-")
_KEBAB_FROM = (re.compile(r"-(?<=[a-z0-9]-)[a-z0-9]").search, "_-")
_MIXED_FROM = (re.compile(r"[0-9](?<=[A-Za-z-][0-9])").search, "_-")
_IDENTS = (
    (_HOST, "host", DOT_B, _HOST_FROM),
    (_SNAKE, "code", SNAKE_B, _SNAKE_FROM),
    (_CALL, "code", CALL_B, None),
    (_CAMEL, "code", CAMEL_B, _CAMEL_FROM),
)


def _first_run(line: str, start: tuple[Callable[[str], re.Match[str] | None], str] | None) -> int:
    """Where the run of characters that holds the first match of the gate `start` begins
    (letters, digits and the given ones); -1 without a match; 0 without a gate."""
    if start is None:
        return 0
    m = start[0](line)
    if m is None:
        return -1
    p, chars = m.start(), start[1]
    while p and (line[p - 1].isalnum() or line[p - 1] in chars):
        p -= 1
    return p


def line_shapes(text: str, starts: list[int]) -> list[int]:
    """The shape bits of each line of `text`, whose lines start at the offsets `starts`."""
    masks = [0] * len(starts)
    ascii_ = text.isascii()
    gates = _GATES if ascii_ else (*_GATES, ("", _CJK_LINE, CJK_B))
    for literal, rx, bit in gates:
        if literal not in text:
            continue
        for m in rx.finditer(text):
            masks[bisect_right(starts, m.start()) - 1] |= bit
    # one byte a character: "?" stands for every character outside ASCII
    classes = (text.encode("ascii") if ascii_ else text.encode("ascii", "replace")).translate(
        _CLASSES
    )
    last = len(starts) - 1
    for pair, bit in _PAIR_GATES:
        find = classes.find
        at = find(pair)
        while at >= 0:  # the first of a line; then the next line's
            i = bisect_right(starts, at) - 1
            masks[i] |= bit
            if i == last:
                break
            at = find(pair, starts[i + 1])
    return masks


def blank(line: str, start: int, end: int) -> str:
    return line[:start] + " " * (end - start) + line[end:]


def add(
    out: list[Raw],
    surface: str,
    line: int,
    source: str,
    kind: str | None = None,
    weight: float = 3.0,
    alias_to: str | None = None,
    key: str | None = None,
) -> Raw | None:
    name = display_name(surface) if source not in ("code", "host", "url", "email") else surface
    k = key if key is not None else canonical_key(name)
    if not k or len(k) > 200:
        return None
    raw = Raw(k, surface, name, line, source, {kind: weight} if kind else {}, alias_to)
    out.append(raw)
    return raw


def hint(out: list[Raw], key: str, line: int, kind: str, weight: float) -> None:
    """A vote for `key` that is not a mention (it counts if something else mentions the key)."""
    out.append(Raw(key, "", "", line, "hint", {kind: weight}))


_BRAND = re.compile(r"(?<![\w'’-])([A-Z][a-z][A-Za-z]+) $").search


def _identifier(word: str) -> str:
    """'compute_fx_rate()' -> 'compute_fx_rate'."""
    return word[:-2] if word.endswith("()") else word


def _kebab_ok(word: str) -> bool:
    parts = word.split("-")
    return (
        any(ch.isdigit() for ch in word)
        or (len(parts) > 2 and not _compound(parts))
        or parts[-1] in _INFRA
        or _uncommon_part(parts)
    )


# inside an English compound: "end-to-end", "one-on-one", "state-of-the-art", "step-by-step"
_COMPOUND_INNER = cues.words("to on of by in the a an so and or for at per with over")


def _compound(parts: list[str]) -> bool:
    """An English compound of three words or more, no identifier: a small word joins its words,
    which are common words or short ones (an infrastructure word at the end still makes an
    identifier: _kebab_ok)."""
    return any(p in _COMPOUND_INNER for p in parts[1:-1]) and not _uncommon_part(parts)


def _uncommon_part(parts: list[str]) -> bool:
    common = cues.common_words()  # once, not once a part
    return any(len(p) >= 4 and p not in common for p in parts)


def _host_ok(host: str) -> bool:
    labels = host.split(".")
    last = labels[-1]
    if not last.isalpha() or len(last) < 2 or all(len(p) < 2 for p in labels[:-1]):
        return False
    if last in _FILE_EXT:
        return True
    return last in _TLDS or len(labels) > 2 or any(c.isdigit() or c == "-" for c in host)


def _shaped(key: str, source: str) -> str:
    """The type of a code-shaped word in prose: a well-known system written so ("iOS", "jQuery",
    "macOS") is that system; anything else an identifier."""
    return SYSTEM if source == "code" and key in cues.systems()[0] else IDENTIFIER


_COMMAND = re.compile(r"[a-z][a-z0-9_-]{2,}").fullmatch  # a code span's first word


_SPAN_IDENTS = (  # a code span's identifiers, and where each pattern can first match
    (_SNAKE, _SNAKE_FROM),
    (_CALL, None),  # a call holds "()"
    (_CAMEL, _CAMEL_FROM),
    (_MIXED, _MIXED_FROM),
    (_KEBAB, _KEBAB_FROM),
)


def code_span(text: str, n: int, out: list[Raw]) -> None:
    """Identifiers inside `inline code`: every identifier-shaped word, or the span itself when
    it is one word."""
    t = text.strip()
    if _CODE_WORD.match(t) and not t.isupper() and len(t) >= 3 and " " not in t:
        add(out, _identifier(t), n, "code", IDENTIFIER, 3.0, key=canonical_key(t))
        return
    seen: set[str] = set()
    first = t.split(" ", 1)[0]
    if _COMMAND(first) and first not in cues.common_words():
        seen.add(first)
        add(out, first, n, "code", IDENTIFIER, 3.0, key=first)
    at = _first_run(t, _HOST_FROM)
    for m in _HOST.finditer(t, at) if at >= 0 else ():
        if _host_ok(m.group(1)):
            seen.add(m.group(1))
            add(out, m.group(1), n, "host", IDENTIFIER, 3.0, key=m.group(1))
            t = blank(t, m.start(), m.end())
    for rx, start in _SPAN_IDENTS:
        at = _first_run(t, start) if start is not None else 0 if "()" in t else -1
        for m in rx.finditer(t, at) if at >= 0 else ():
            w = _identifier(m.group(1) if rx is _CALL else m.group(0))
            if len(w) >= 3 and w not in seen:
                seen.add(w)
                add(out, w, n, "code", IDENTIFIER, 3.0, key=canonical_key(w))


def explicit(line: str, n: int, out: list[Raw], known: set[str], has: int = ANY_SHAPE) -> str:
    """Everything but capitalised names, found in one line (code already masked) and blanked;
    `has` is the line's bits from line_shapes (it may hold shapes the line lacks)."""
    if has & WIKI_B and "[[" in line:
        for m in WIKI.finditer(line):
            target, _, alias = m.group(1).replace("\\|", "|").partition("|")
            target, section, _ = target.partition("#")
            target = target.strip()
            name = target.rstrip("/").rsplit("/", 1)[-1]
            if name.lower().endswith(".md"):
                name = name[:-3]
            elif "." in name and name.rsplit(".", 1)[1].lower() in ("png", "jpg", "pdf", "svg"):
                name = ""
            key = canonical_key(name)
            if key:
                add(out, name, n, "wikilink", key=key)
                known.add(key)
                # a link to a heading or a block: its label names the section, not the note
                if alias.strip() and not section and canonical_key(alias) != key:
                    add(out, alias.strip(), n, "alias", alias_to=key)
            line = blank(line, m.start(), m.end())
    if has & URL_B and "://" in line:
        for m in _URL.finditer(line):
            host = m.group(1).rsplit("@", 1)[-1].split(":", 1)[0].lower().removeprefix("www.")
            if host:
                add(out, host, n, "url", IDENTIFIER, 2.0, key=host)
            line = blank(line, m.start(), m.end())
    if has & AT_B and "@" in line:
        for m in _EMAIL.finditer(line):
            add(out, m.group(0), n, "email", IDENTIFIER, 3.0, key=m.group(0).lower())
            line = blank(line, m.start(), m.end())
        for m in _AT.finditer(line):
            add(out, m.group(1), n, "mention", PERSON, 3.0)
            known.add(canonical_key(m.group(1)))
            line = blank(line, m.start(), m.end())
    if has & TAG_B and "#" in line:
        for m in _TAG.finditer(line):
            tag = m.group(1).strip("/").lower()
            if tag and not tag.replace("/", "").isdigit():
                add(out, "#" + tag, n, "tag", TAG, 5.0, key="#" + tag)
            line = blank(line, m.start(), m.end())
    if has & QUOTE_B and ('"' in line or "“" in line):
        for m in _QUOTED.finditer(line):
            inner = m.group(1).strip()
            ws = inner.split()
            if 2 <= len(ws) <= 8 and all(w[0].isupper() for w in ws if len(w) > 3):
                add(out, inner, n, "quoted", OTHER, 1.0)
                line = blank(line, m.start(), m.end())
    if has & CJK_B and HAS_CJK(line):
        for m in _BRACKET.finditer(line):
            inner = m.group(1).strip()
            if HAS_CJK(inner) and len(inner) <= 16:
                after = line[m.end() : m.end() + 2]
                person = any(after.startswith(h) for h in cues.CJK_HONORIFICS)
                # 「田中さん」: the honorific inside the brackets says person as well
                own = next((h for h in cues.CJK_HONORIFICS if inner.endswith(h)), "")
                if own and HAS_CJK(inner[: -len(own)]):
                    inner, person = inner[: -len(own)], True
                add(out, inner, n, "quoted", PERSON if person else None)
                line = blank(line, m.start(), m.end())
        for m in _CJK_HONORIFIC.finditer(line):
            add(out, m.group(1), n, "quoted", PERSON, 2.0)
    if has & DOT_B and "." in line:  # Node.js, ASP.NET: a product, not a host
        for m in _DOTTED_NAME.finditer(line):
            add(out, m.group(), n, "name", SYSTEM, 3.0)
            line = blank(line, m.start(), m.end())
    for rx, source, bit, start in _IDENTS:
        if not has & bit or (at := _first_run(line, start)) < 0:
            continue
        for m in rx.finditer(line, at):
            w = m.group(1) if rx is not _SNAKE and rx is not _CAMEL else m.group(0)
            if rx is _HOST:
                if not _host_ok(w):
                    continue
                w = w.removeprefix("www.")  # as a URL's host: one key for www.x.org and x.org
            w = _identifier(w)
            k = canonical_key(w)
            add(out, w, n, source, _shaped(k, source), 3.0, key=k)
            line = blank(line, m.start(), m.end())
    at = _first_run(line, _KEBAB_FROM) if has & HYPHEN_B else -1
    for m in _KEBAB.finditer(line, at) if at >= 0 else ():
        if _kebab_ok(m.group(0)):
            add(out, m.group(0), n, "code", IDENTIFIER, 3.0, key=m.group(0))
            line = blank(line, m.start(), m.end())
    at = _first_run(line, _MIXED_FROM) if has & DIGIT_B else -1
    for m in _MIXED.finditer(line, at) if at >= 0 else ():
        w = m.group(0)
        if len(w) >= 4 and any(c.isalpha() for c in w) and not cues.VERSION.match(w):
            k = canonical_key(w)
            add(out, w, n, "code", _shaped(k, "code"), 3.0, key=k)
            brand = _BRAND(line, max(0, m.start() - 40), m.start())
            if brand:  # a make before a model: "a Fujifilm X100V", "the Raspberry Pi 4B"
                hint(out, canonical_key(brand.group(1)), n, SYSTEM, 2.0)
            line = blank(line, m.start(), m.end())
    return line
