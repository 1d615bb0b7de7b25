"""Deterministic corpora: markdown workspaces of realistic shape, and synthetic vectors."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

WORDS = [
    "deploy",
    "cluster",
    "service",
    "database",
    "replica",
    "index",
    "cache",
    "queue",
    "worker",
    "token",
    "session",
    "request",
    "latency",
    "budget",
    "release",
    "branch",
    "review",
    "test",
    "build",
    "image",
    "container",
    "network",
    "bridge",
    "proxy",
    "certificate",
    "backup",
    "restore",
    "snapshot",
    "metric",
    "alert",
    "dashboard",
    "incident",
    "postmortem",
    "rollout",
    "feature",
    "flag",
    "schema",
    "migration",
    "column",
    "table",
    "query",
    "planner",
    "vacuum",
    "partition",
    "shard",
    "tenant",
    "customer",
    "invoice",
    "payment",
    "refund",
    "email",
    "template",
    "locale",
    "timezone",
    "calendar",
    "meeting",
    "sprint",
    "retro",
    "roadmap",
    "hiring",
    "onboarding",
    "laptop",
    "keyboard",
    "editor",
    "terminal",
    "theme",
    "font",
    "plugin",
    "shell",
    "script",
    "cron",
    "job",
    "scheduler",
    "retry",
    "timeout",
    "backoff",
    "circuit",
    "breaker",
    "load",
    "balancer",
    "ingress",
    "kubernetes",
    "docker",
    "postgres",
    "redis",
    "kafka",
    "rabbitmq",
    "terraform",
    "ansible",
    "grafana",
    "prometheus",
    "loki",
]
TOPICS = ["Infra", "Decisions", "Meetings", "Incidents", "Runbooks", "People", "Ideas", "Docs"]


def _vocabulary(size: int = 20_000, seed: int = 11) -> list[str]:
    """The tech words first, then made-up words: ranked for a Zipf distribution, as in real
    notes, where a few words are everywhere and most are rare."""
    rng = random.Random(seed)
    syllables = [
        "ka",
        "lo",
        "mi",
        "ter",
        "on",
        "ra",
        "vi",
        "sen",
        "tu",
        "pel",
        "dor",
        "an",
        "que",
        "bri",
        "sto",
        "nal",
        "fe",
        "gu",
        "ix",
        "mo",
    ]
    made = {
        "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size * 2)
    }
    return WORDS + sorted(made - set(WORDS))[: size - len(WORDS)]


VOCAB = _vocabulary()
_WEIGHTS = [1 / (rank + 10) for rank in range(len(VOCAB))]


def sentence(rng: random.Random, n: int | None = None) -> str:
    words = rng.choices(VOCAB, weights=_WEIGHTS, k=n or rng.randint(6, 18))
    return " ".join(words).capitalize() + "."


def note(rng: random.Random, index: int, sections: int) -> str:
    tags = ", ".join(rng.sample(WORDS, 2))
    parts = [
        f"---\ntags: [{tags}]\ntype: note\nimportance: {rng.randint(1, 10)}\n---\n",
        f"# {rng.choice(TOPICS)} note {index}\n\n{sentence(rng)}\n",
    ]
    for s in range(sections):
        parts.append(f"\n## Section {s} {rng.choice(WORDS)}\n\n")
        kind = rng.random()
        if kind < 0.5:
            parts.append(" ".join(sentence(rng) for _ in range(rng.randint(2, 6))) + "\n")
        elif kind < 0.7:
            parts.append("".join(f"- {sentence(rng, 6)}\n" for _ in range(rng.randint(2, 6))))
        elif kind < 0.85:
            parts.append(
                "```sh\n"
                + "".join(
                    f"{rng.choice(WORDS)} --{rng.choice(WORDS)}\n" for _ in range(rng.randint(2, 8))
                )
                + "```\n"
            )
        else:
            parts.append(
                f"See [note {rng.randint(0, index + 1)}](note-{rng.randint(0, 9)}.md) "
                f"and {sentence(rng)}\n"
            )
        if rng.random() < 0.2:
            parts.append(f"\n### Detail\n\n{sentence(rng)} {sentence(rng)}\n")
    return "".join(parts)


def write_workspace(
    root: Path, target_chunks: int, seed: int = 42, max_files: int | None = None
) -> dict[str, int]:
    """Notes of 1 to 12 sections (most short, a few pages long) until about target_chunks
    (or max_files notes, whichever comes first)."""
    from memoryd.text.markdown import parse_document

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    chunks = files = 0
    while chunks < target_chunks and (max_files is None or files < max_files):
        sections = min(12, max(1, int(rng.expovariate(1 / 3))))
        text = note(rng, files, sections)
        folder = root / rng.choice(TOPICS).lower() / f"{files // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{files:06d}.md").write_text(text)
        chunks += len(parse_document(text)[1])
        files += 1
    return {"files": files, "chunks": chunks}


def synthetic_vectors(n: int, dim: int = 384, seed: int = 7, clusters: int = 500) -> np.ndarray:
    """Unit vectors with cluster structure and a shared dominant direction, like text embeddings
    (which all lie in a narrow cone rather than spread over the sphere)."""
    rng = np.random.default_rng(seed)
    common = rng.normal(size=dim).astype(np.float32)
    centers = rng.normal(size=(clusters, dim)).astype(np.float32) + 2.0 * common
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        block = centers[rng.integers(0, clusters, m)] + 0.8 * rng.normal(size=(m, dim)).astype(
            np.float32
        )
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out
