"""The secret guard: content that looks like a credential is refused (or warned, or redacted).

Patterns follow what gitleaks and detect-secrets look for; the high-entropy check only looks at
long unbroken tokens so ordinary prose is not flagged. Findings name the kind of secret, never
its value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    (
        "credential_assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?token"
            r"|client[_-]?secret)\b\s*[:=]\s*['\"]?(?P<value>[^\s'\"]{6,})"
        ),
    ),
]
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")


def entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


def scan(text: str) -> list[Finding]:
    """Every credential-looking span, by kind (overlaps resolved in favour of the first)."""
    found: list[Finding] = []
    for kind, pattern in PATTERNS:
        for m in pattern.finditer(text):
            start, end = (
                (m.start("value"), m.end("value"))
                if "value" in pattern.groupindex
                else (m.start(), m.end())
            )
            found.append(Finding(kind, start, end))
    for m in _TOKEN.finditer(text):
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


def redact(text: str) -> str:
    pieces, last = [], 0
    for f in scan(text):
        pieces.append(text[last : f.start])
        pieces.append(f"[REDACTED:{f.kind}]")
        last = f.end
    pieces.append(text[last:])
    return "".join(pieces)
