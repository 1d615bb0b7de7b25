"""The config file's sections: one frozen dataclass per [table], each field with its default and
its validator spec (read by core/config.py, which validates, loads and diffs them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# --- sections ----------------------------------------------------------------------------------
# Each field's metadata carries its validator: ("int", lo, hi), ("float", lo, hi), ("bool",),
# ("str",), ("choice", options), ("globs",), ("duration",), ("path",) (a file or folder,
# expanded and made absolute as the top-level paths are).


def _f(default: Any, *spec: Any) -> Any:
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"spec": spec})
    return field(default=default, metadata={"spec": spec})


@dataclass(frozen=True)
class IndexerConfig:
    include: list[str] = _f(["**/*.md"], "globs")
    exclude: list[str] = _f([], "globs")
    skip_hidden: bool = _f(True, "bool")
    skip_tool_files: bool = _f(True, "bool")
    debounce_ms: int = _f(500, "int", 0, 60000)
    max_file_bytes: int = _f(2_000_000, "int", 1024, 1 << 31)
    chunk_max_tokens: int = _f(200, "int", 32, 2048)
    chunk_overlap_tokens: int = _f(30, "int", 0, 2047)
    max_chunks_per_file: int = _f(5000, "int", 1, 1_000_000)
    follow_symlinks: bool = _f(True, "bool")


@dataclass(frozen=True)
class MemoriesConfig:
    max_content_bytes: int = _f(10240, "int", 1, 1048576)
    default_type: str = _f("fact", "name")
    default_importance: int = _f(5, "int", 1, 10)
    default_namespace: str = _f("default", "name")


@dataclass(frozen=True)
class SearchConfig:
    default_limit: int = _f(10, "int", 1, 1000)
    max_limit: int = _f(100, "int", 1, 1000)
    fusion: str = _f("weighted", "choice", ("rrf", "weighted"))
    rrf_k: int = _f(60, "int", 1, 10000)
    candidate_multiplier: int = _f(2, "int", 1, 50)
    keyword_weight: float = _f(0.6, "float", 0.0, 100.0)
    vector_weight: float = _f(0.4, "float", 0.0, 100.0)
    partial_match_weight: float = _f(0.15, "float", 0.0, 1.0)
    coverage_power: float = _f(3.0, "float", 0.0, 16.0)
    entity_weight: float = _f(0.4, "float", 0.0, 10.0)
    weak_neighbours: bool = _f(True, "bool")
    importance_weight: float = _f(0.1, "float", 0.0, 100.0)
    recency_weight: float = _f(0.1, "float", 0.0, 100.0)
    recency_half_life_days: float = _f(30.0, "float", 0.001, 1e6)
    frequency_weight: float = _f(0.05, "float", 0.0, 100.0)
    fuzzy: bool = _f(True, "bool")
    fuzzy_min_similarity: float = _f(0.4, "float", 0.0, 1.0)


@dataclass(frozen=True)
class EmbeddingConfig:
    enabled: bool = _f(True, "bool")
    model_path: str = _f("", "path")
    model: str = _f("sentence-transformers/all-MiniLM-L6-v2", "str")
    allow_download: bool = _f(True, "bool")
    batch_size: int = _f(8, "int", 1, 1024)
    threads: int = _f(0, "int", 0, 256)
    query_cache_size: int = _f(512, "int", 0, 1_000_000)
    vector_gc_days: float = _f(7.0, "float", 0.0, 36500.0)


@dataclass(frozen=True)
class ServerConfig:
    max_request_bytes: int = _f(1048576, "int", 1024, 67108864)
    max_connections: int = _f(64, "int", 1, 10000)
    idle_timeout_s: float = _f(300.0, "float", 0.1, 86400.0)
    first_request_timeout_s: float = _f(10.0, "float", 0.1, 86400.0)
    request_timeout_s: float = _f(30.0, "float", 0.1, 86400.0)
    shutdown_timeout_s: float = _f(10.0, "float", 0.1, 3600.0)


@dataclass(frozen=True)
class WebConfig:
    """The local web page (docs/web.md): off until enabled here or opened by `memoryctl open`;
    loopback only; port 0 takes the last port again if free, else any (written to
    <data_dir>/web.json)."""

    enabled: bool = _f(False, "bool")
    host: str = _f("127.0.0.1", "choice", ("127.0.0.1", "::1"))
    port: int = _f(0, "int", 0, 65535)
    session_hours: float = _f(12.0, "float", 0.01, 8760.0)


@dataclass(frozen=True)
class LoggingConfig:
    level: str = _f("info", "choice", ("debug", "info", "warning", "error"))
    format: str = _f("auto", "choice", ("auto", "json", "console"))
    file: str = _f("", "path")


@dataclass(frozen=True)
class DailyLogConfig:
    enabled: bool = _f(True, "bool")
    folder: str = _f("daily", "relpath")
    filename: str = _f("%Y-%m-%d.md", "logname")
    line_format: str = _f("- {time} [{type}] {content}{tags}", "format")
    header: str = _f("# Memories {date}", "format")


@dataclass(frozen=True)
class NotesConfig:
    max_bytes: int = _f(1_048_576, "int", 1, 1 << 31)


@dataclass(frozen=True)
class JobsConfig:
    expiry_interval: float = _f(300.0, "duration")
    backfill_interval: float = _f(600.0, "duration")
    optimize_interval: float = _f(86400.0, "duration")
    checkpoint_interval: float = _f(900.0, "duration")
    quick_check_interval: float = _f(86400.0, "duration")
    reconcile_interval: float = _f(3600.0, "duration")
    snapshot_interval: float = _f(86400.0, "duration")
    snapshot_keep: int = _f(7, "int", 0, 10000)


@dataclass(frozen=True)
class LifecycleConfig:
    boost_constitutional: float = _f(0.3, "float", -10.0, 10.0)
    boost_critical: float = _f(0.2, "float", -10.0, 10.0)
    boost_important: float = _f(0.1, "float", -10.0, 10.0)
    boost_normal: float = _f(0.0, "float", -10.0, 10.0)
    boost_temporary: float = _f(-0.05, "float", -10.0, 10.0)
    boost_deprecated: float = _f(-0.2, "float", -10.0, 10.0)
    half_life_days_critical: float = _f(365.0, "float", 0.001, 1e6)
    half_life_days_important: float = _f(180.0, "float", 0.001, 1e6)
    half_life_days_normal: float = _f(90.0, "float", 0.001, 1e6)
    half_life_days_temporary: float = _f(7.0, "float", 0.001, 1e6)
    half_life_days_deprecated: float = _f(30.0, "float", 0.001, 1e6)
    decay_floor: float = _f(0.3, "float", 0.0, 1.0)
    temporary_ttl: float = _f(604800.0, "duration")
    session_max_tokens: int = _f(500, "int", 1, 1_000_000)
    promotion_min_useful: int = _f(5, "int", 1, 1_000_000)
    promotion_min_ratio: float = _f(0.9, "float", 0.0, 1.0)
    near_duplicate_similarity: float = _f(0.92, "float", 0.0, 1.0)
    near_duplicate_overlap: float = _f(0.8, "float", 0.0, 1.0)


@dataclass(frozen=True)
class StoreConfig:
    """Where memories and the index live: one SQLite file in data_dir (the default), or a
    PostgreSQL database that several daemons share (docs/team.md)."""

    backend: str = _f("sqlite", "choice", ("sqlite", "postgres"))
    dsn: str = _f("", "dsn")
    password_file: str = _f("", "path")
    workspace_id: str = _f("", "str")
    pool_size: int = _f(8, "int", 1, 1000)
    statement_timeout_ms: int = _f(30000, "int", 100, 86_400_000)
    connect_timeout_s: float = _f(5.0, "float", 0.1, 600.0)
    vector_cache: bool = _f(False, "bool")


@dataclass(frozen=True)
class SecretsConfig:
    mode: str = _f("refuse", "choice", ("refuse", "warn", "redact", "off"))
    flag_workspace_hits: bool = _f(True, "bool")


SECTIONS: dict[str, type] = {
    "indexer": IndexerConfig,
    "memories": MemoriesConfig,
    "search": SearchConfig,
    "embedding": EmbeddingConfig,
    "server": ServerConfig,
    "web": WebConfig,
    "logging": LoggingConfig,
    "dailylog": DailyLogConfig,
    "notes": NotesConfig,
    "jobs": JobsConfig,
    "lifecycle": LifecycleConfig,
    "secrets": SecretsConfig,
    "store": StoreConfig,
}
