"""The secret guard: content that looks like a credential is refused (or warned, or redacted).

Patterns follow what gitleaks and detect-secrets look for; the high-entropy check only looks at
long unbroken tokens so ordinary prose is not flagged. Findings name the kind of secret, never
its value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

_KEY_NAME = (
    r"(?:password|pgpassword|passwd|pwd|passphrase|secret|token|api[_-]?key|access[_-]?key|auth[_-]?token"
    r"|client[_-]?secret)"
)
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # the whole block, header to END line (or to the end of the text when it was cut off): the
    # base64 body is the secret, and a redaction that kept it would keep the key
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.DOTALL,
        ),
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")),
    (
        "gitlab_token",
        re.compile(r"\bgl(?:pat|dt|ptt|rt|cbt|soat|ft|imt|agent)-[A-Za-z0-9_-]{20,}"),
    ),
    ("slack_token", re.compile(r"\bx(?:ox[abeprs]|app)-[A-Za-z0-9-]{10,}")),
    (
        "slack_webhook",
        re.compile(
            r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}"
        ),
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[a-z]+\d*-[A-Za-z0-9_-]{20,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi_token", re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("digitalocean_token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    # an HTTP header as curl -H and HTTP clients write it: Authorization: Bearer|Basic|Token X
    (
        "authorization_header",
        re.compile(
            r"(?i)\bauthorization['\"]?[ \t]*[:=][ \t]*['\"]?(?:bearer|basic|token|bot)[ \t]+"
            r"(?P<value>[A-Za-z0-9._~+/=-]{8,})"
        ),
    ),
    # user:PASSWORD@ in a URL (postgresql://, mysql://, mongodb+srv://, redis://:pw@, https://)
    (
        "url_password",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/?#@\[\]]*:(?P<value>[^\s/?#@]+)@"),
    ),
    # NAME = value, NAME: value, "NAME": "value", also as .env and shell spell the name
    # (DB_PASSWORD=, AWS_SECRET_ACCESS_KEY=, export GITHUB_TOKEN=)
    (
        "credential_assignment",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*" + _KEY_NAME + r"\b['\"]?"
            r"[ \t]*[:=][ \t]*['\"]?(?P<value>[^\s'\"]{6,})"
        ),
    ),
]
# what templates, docs and code write where the secret goes: ${DB_PASSWORD}, $TOKEN,
# <password>, [MASK], {{ secret }}, ****, xxxxxx, %s, and code: os.Getenv("X"), os.environ["X"],
# getpass(), str(cfg.get("token")), re.compile(...); not a credential
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|<[^>]*>|\{\{?[^}]*\}?\}|\*+|x+|\.+|%s"
    r"|\[[^\]]*\]|pass(?:word)?|passwd|pwd|secret)$|^[A-Za-z_][\w.]*[(\[]"
)
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")
# The case-insensitive patterns as case-sensitive ones over text.lower(), several times faster
# (re's IGNORECASE alternations are slow). The same spans: lower() keeps every offset when it
# keeps the length, and the only characters re.IGNORECASE matches to ASCII letters besides
# their cases are these four (texts holding one take the IGNORECASE patterns). For
# credential_assignment, a name's NAME_ prefix matters only for where the match starts, and
# findings are the value's span: a name not preceded by a letter or digit is the same rule.
_IGNORECASE_ODD = "\u017f\u212a\u0130\u0131"  # long s, Kelvin sign, dotted and dotless i
_LOWERED: dict[str, re.Pattern[str]] = {
    "authorization_header": re.compile(
        r"\bauthorization['\"]?[ \t]*[:=][ \t]*['\"]?(?:bearer|basic|token|bot)[ \t]+"
        r"(?P<value>[a-z0-9._~+/=-]{8,})"
    ),
    "credential_assignment": re.compile(
        r"(?<![a-z0-9])" + _KEY_NAME + r"\b['\"]?[ \t]*[:=][ \t]*['\"]?(?P<value>[^\s'\"]{6,})"
    ),
}
# Text each pattern cannot match without (a plain `in`, far cheaper than a regex over the whole
# text): a pattern runs only when one of its needles is there, so the findings are the same.
# Case-insensitive patterns look in text.casefold(), which folds what re.IGNORECASE matches
# (the long s, the Kelvin sign) onto the ASCII letters of the needles.
_NEEDLES: dict[str, tuple[str, ...]] = {
    "private_key": ("PRIVATE KEY",),
    "aws_access_key": ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": tuple(
        f"gl{p}-" for p in ("pat", "dt", "ptt", "rt", "cbt", "soat", "ft", "imt", "agent")
    ),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack.com",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("k_live_", "k_test_"),
    "huggingface_token": ("hf_",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-AgE",),
    "google_api_key": ("AIza",),
    "jwt": ("eyJ",),
    "digitalocean_token": ("_v1_",),
    "url_password": ("://",),  # and "@" (scan)
}
_FOLDED_NEEDLES: dict[str, tuple[str, ...]] = {
    "authorization_header": ("authorization",),
    "credential_assignment": (
        *("pass", "pwd", "secret", "token", "apikey", "accesskey"),
        *(f"{w}{sep}key" for w in ("api", "access") for sep in "_-"),
    ),
}


def entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


def scan(text: str, guess: bool = True) -> list[Finding]:
    """Every credential-looking span, by kind (overlaps resolved in favour of the first);
    guess=False: only the shaped kinds, without the high-entropy guess."""
    found: list[Finding] = []
    low: str | None = None
    plain = False
    for kind, pattern in PATTERNS:
        hay = text
        if kind in _FOLDED_NEEDLES:
            if low is None:
                low = text.lower()
                plain = len(low) == len(text) and not any(c in text for c in _IGNORECASE_ODD)
                if not plain:
                    low = text.casefold()  # for the needles only
            if not any(n in low for n in _FOLDED_NEEDLES[kind]):
                continue
            if plain:
                hay, pattern = low, _LOWERED[kind]
        elif not any(n in text for n in _NEEDLES[kind]) or (
            kind == "url_password" and "@" not in text
        ):
            continue
        for m in pattern.finditer(hay):
            if "value" in pattern.groupindex:
                if _PLACEHOLDER.match(text[m.start("value") : m.end("value")]):
                    continue
                start, end = m.start("value"), m.end("value")
            else:
                start, end = m.start(), m.end()
            found.append(Finding(kind, start, end))
    for m in _TOKEN.finditer(text) if guess else ():
        token = m.group()
        has_mix = any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
        if has_mix and entropy(token) >= 4.0:
            found.append(Finding("high_entropy_token", m.start(), m.end()))
    found.sort(key=lambda f: (f.start, -f.end))
    out: list[Finding] = []
    for f in found:
        if out and f.start < out[-1].end:
            continue
        out.append(f)
    return out


def kinds(text: str) -> list[str]:
    return sorted({f.kind for f in scan(text)})


def redact(text: str, *, guess: bool = True) -> str:
    """`text` with each credential found replaced by `[REDACTED:kind]` (`guess`: the
    high-entropy guess too)."""
    return _replaced(text, scan(text, guess=guess), lambda f: f"[REDACTED:{f.kind}]")


def _replaced(text: str, found: list[Finding], by: Callable[[Finding], str]) -> str:
    """`text` with each finding's span replaced by `by(finding)` (findings in order, apart)."""
    if not found:
        return text
    pieces, last = [], 0
    for f in found:
        pieces.append(text[last : f.start])
        pieces.append(by(f))
        last = f.end
    pieces.append(text[last:])
    return "".join(pieces)


def redact_known(text: str) -> str:
    """The log's redaction: every kind with a known shape (keys, tokens, private keys, URL
    passwords, NAME=value), not the high-entropy guess, which log lines full of paths, hashes
    and ids would trip on."""
    return redact(text, guess=False)


def mask_known(text: str) -> str:
    """The text with every shaped credential blanked as x's (line ends kept, so lines and
    offsets stay; not spaces, which would make `user:PASSWORD@host` read as an @mention of
    host): what entity extraction reads, so a password is never made an entity."""
    return _replaced(
        text,
        scan(text, guess=False),
        lambda f: "".join("\n" if c == "\n" else "x" for c in text[f.start : f.end]),
    )


# A shaped token is one run of at least this many characters (the shortest: a Slack token's
# `xoxb-` and 10 more), which an extracted name holding a needle is, or is inside of
_SHORTEST_TOKEN = 15
_SHAPED_NEEDLES = tuple(
    n for kind, ns in _NEEDLES.items() if kind not in ("private_key", "url_password") for n in ns
)
_VALUE_NEEDLES = (*(n for ns in _FOLDED_NEEDLES.values() for n in ns), "://")


class _Name(Protocol):
    @property
    def line(self) -> int: ...
    @property
    def surface(self) -> str: ...


def masked_lines(text: str, names: Iterable[_Name]) -> dict[int, str]:
    """{line number (from 1): the line as mask_known blanks it} for the lines of `text` where
    a name found there (entity extraction's mentions: their line and surface) may be a
    credential or inside one: a name of 15 characters or more that holds a token's needle
    (`ghp_`, `sk-`, `AKIA`...), or a line that names a secret (`password`, `token`, `api_key`,
    `authorization`, `://`) with a `:` or `=`. Those are the only lines whose masking could
    change the names found, so the guard reads them instead of the whole note (issue 20.6's
    budget). A text naming a private key (a block over many lines) is masked whole."""
    if "PRIVATE KEY" in text:
        whole = mask_known(text)
        if whole is text:
            return {}
        new = whole.split("\n")
        return {i + 1: new[i] for i, ln in enumerate(text.split("\n")) if ln != new[i]}
    lines: list[str] | None = None
    looked: set[int] = set()  # lines whose words were looked at
    read: set[int] = set()  # lines the guard read
    out: dict[int, str] = {}
    for name in names:
        number, surface = name.line, name.surface
        if number in read:
            continue
        if not (len(surface) >= _SHORTEST_TOKEN and any(n in surface for n in _SHAPED_NEEDLES)):
            if number in looked:
                continue
            looked.add(number)
            if lines is None:
                lines = text.split("\n")
            line = lines[number - 1] if 0 < number <= len(lines) else ""
            if not ("=" in line or ":" in line):
                continue
            low = line.lower()
            if not any(n in low for n in _VALUE_NEEDLES):
                continue
        if lines is None:
            lines = text.split("\n")
        if not 0 < number <= len(lines):
            continue
        read.add(number)
        line = lines[number - 1]
        masked = mask_known(line)
        if masked is not line:
            out[number] = masked
    return out
