"""Configuration: defaults, TOML file, environment overrides, validation, reload diff.

Two phases: `Config.from_dict` validates (pure: no file or network access), `load_config` finds
and reads the file and the environment. Every error names the dotted key and what is wrong.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import string
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w
from pathspec import GitIgnoreSpec

from memoryd.core.configsource import locate, toml_error
from memoryd.core.dsn import DSN_REQUIRED, WORKSPACE_ID, check_dsn, read_password_file
from memoryd.core.errors import ConfigError, InvalidInput, describe
from memoryd.core.runtime import (  # noqa: F401 (default_*: importable from here, as before)
    DEFAULT_PATHS,
    default_data_dir,
    default_socket_path,
    default_workspace,
    expand_home,
    home_or_absolute,
    xdg,
)
from memoryd.core.sections import (
    SECTIONS,
    DailyLogConfig,
    EmbeddingConfig,
    IndexerConfig,
    JobsConfig,
    LifecycleConfig,
    LoggingConfig,
    MemoriesConfig,
    NotesConfig,
    SearchConfig,
    SecretsConfig,
    ServerConfig,
    StoreConfig,
    WebConfig,
)
from memoryd.core.timeutil import parse_duration

MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to 104 bytes on macOS, 108 on Linux


TOP_LEVEL = ("workspace", "data_dir", "socket")
MIN_JOB_INTERVAL = 0.1  # seconds (tests run jobs every 200 ms)
MAX_DURATION = 3650 * 86400.0  # ten years
FORMAT_FIELDS = frozenset(
    {"time", "date", "id", "type", "content", "tags", "source", "importance", "namespace"}
)


@dataclass(frozen=True)
class Config:
    workspace: Path
    data_dir: Path
    socket: Path
    indexer: IndexerConfig = field(default_factory=IndexerConfig)
    memories: MemoriesConfig = field(default_factory=MemoriesConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    web: WebConfig = field(default_factory=WebConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    dailylog: DailyLogConfig = field(default_factory=DailyLogConfig)
    notes: NotesConfig = field(default_factory=NotesConfig)
    jobs: JobsConfig = field(default_factory=JobsConfig)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    secrets: SecretsConfig = field(default_factory=SecretsConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    source: Path | None = field(default=None, compare=False)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "memoryd.db"

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "memoryd.lock"

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        base_dir: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Config:
        env = os.environ if env is None else env
        problems: list[str] = []  # every bad key and value at once, not one per start
        known = set(TOP_LEVEL) | set(SECTIONS)
        for key in data:
            if key not in known:
                problems.append(f"unknown key {key!r}{_suggest(key, known)}")
        base = base_dir or Path.cwd()
        paths: dict[str, Path] = {}
        for key in TOP_LEVEL:  # a default only when not set (it may need a home folder)
            try:
                given = key in data
                paths[key] = _path(data[key], key, base, env) if given else DEFAULT_PATHS[key](env)
            except ConfigError as exc:
                problems.append(exc.message)
        sections: dict[str, Any] = {}
        for name, klass in SECTIONS.items():
            raw = data.get(name, {})
            if not isinstance(raw, Mapping):
                problems.append(f"{name}: expected a table ([{name}]), got {describe(raw)}")
                continue
            section = _section(name, klass, raw, problems, base, env)
            if section is not None:
                sections[name] = section
        store = sections.get("store") or StoreConfig()
        pg = store.backend == "postgres"  # what `memoryd run` refuses
        if pg and not store.dsn:
            problems.append(DSN_REQUIRED)  # `memoryd run` said so; `config check` did not
        if pg and store.workspace_id and not WORKSPACE_ID.match(store.workspace_id):
            problems.append(
                "store.workspace_id: expected letters, digits and . _ : - (at most 128), "
                f"got {store.workspace_id!r}"
            )
        if problems:
            raise ConfigError("; ".join(problems), data={"problems": problems})
        if os.path.normpath(paths["data_dir"]) == os.path.normpath(paths["workspace"]):
            raise ConfigError(
                "data_dir: must not be the workspace itself (the database, checkpoints and trash "
                "would sit among the notes); use a folder outside it, or a sub-folder such as "
                "'<workspace>/.memoryd'"
            )
        if len(str(paths["socket"]).encode()) > MAX_SOCKET_PATH:
            where = (
                "" if "socket" in data else " (the default, from XDG_RUNTIME_DIR or the data dir)"
            )
            raise ConfigError(
                f"socket: path {paths['socket']}{where} is longer than {MAX_SOCKET_PATH} bytes "
                "(Unix socket paths are limited); set `socket` to a shorter one"
            )
        idx, srch = sections["indexer"], sections["search"]
        if idx.chunk_overlap_tokens >= idx.chunk_max_tokens:
            raise ConfigError(
                "indexer.chunk_overlap_tokens: must be smaller than indexer.chunk_max_tokens"
            )
        if srch.default_limit > srch.max_limit:
            raise ConfigError("search.default_limit: must not exceed search.max_limit")
        cfg = cls(**{**paths, **sections})
        cfg.check_log_file()
        return cfg

    def check_log_file(self, *others: Path) -> None:
        """logging.file must not name a file memoryd keeps for something else: log lines
        appended to the database, its WAL, the lock, the socket or the config file itself
        would corrupt it (the config would not load at the next start)."""
        if not self.logging.file:
            return
        log_file = os.path.normpath(expand_home(self.logging.file, "logging.file"))
        db = str(self.db_path)
        own = [db, db + "-wal", db + "-shm", db + "-journal", str(self.lock_path), str(self.socket)]
        for path in [*own, *map(str, others)]:
            if log_file == os.path.normpath(path):
                raise ConfigError(
                    f"logging.file: {self.logging.file} is one of memoryd's own files ({path}); "
                    "choose another file, such as <data_dir>/memoryd.log"
                )

    def setting_for(self, path: str | os.PathLike[str] | None) -> str | None:
        """The path setting a failed file operation was about: the one whose path is `path`,
        lies inside it (a folder on the way could not be made) or holds it (a file in
        data_dir); the most specific when several do (a data_dir inside the workspace)."""
        if path is None:
            return None
        p = os.path.normpath(os.fsdecode(path))
        best: tuple[int, str] | None = None
        named = {k: str(getattr(self, k)) for k in TOP_LEVEL}
        for section, key in _section_paths():
            named[f"{section}.{key}"] = getattr(getattr(self, section), key)
        for key, value in named.items():
            if not value:
                continue
            q = os.path.normpath(value)
            related = p == q or q.startswith(p + os.sep) or p.startswith(q + os.sep)
            if related and (best is None or len(q) > best[0]):
                best = (len(q), key)
        return best[1] if best else None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: str(getattr(self, k)) for k in TOP_LEVEL}
        for name in SECTIONS:
            out[name] = dataclasses.asdict(getattr(self, name))
        return out


# --- validation --------------------------------------------------------------------------------


def _suggest(key: str, options: set[str] | list[str]) -> str:
    close = difflib.get_close_matches(key, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _path(value: Any, key: str, base: Path, env: Mapping[str, str]) -> Path:
    """Every path setting's one rule: $VARS and ~ expanded, relative to the config file's
    folder (`base`). A variable that is not set is an error: under a service manager the
    shell's variables are not there, and the path would have been made with `$NAME` in it."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: expected a path string, got {describe(value)}")
    expanded = expand_home(_expand_vars(value, key, env), key, env)
    p = Path(expanded)
    return p if p.is_absolute() else (base / p)


def _expand_vars(value: str, key: str, env: Mapping[str, str]) -> str:
    template = string.Template(value)
    try:
        names = [
            m.group("named") or m.group("braced")
            for m in template.pattern.finditer(value)
            if m.group("named") or m.group("braced")
        ]
        missing = [n for n in names if n not in env]
        if missing:
            raise ConfigError(
                f"{key}: ${missing[0]} is not set (in {value!r}); set it in memoryd's "
                "environment (a service does not see your shell's), or write the path out "
                "($$ for a literal $)"
            )
        return template.substitute(env)
    except ValueError:  # a lone '$' (not a variable): the text as written
        return value


def _section(
    name: str,
    klass: type,
    raw: Mapping[str, Any],
    problems: list[str],
    base: Path,
    env: Mapping[str, str],
) -> Any:
    """The section's dataclass, or None when a key or value is bad (each one added to
    `problems`)."""
    flds = {f.name: f for f in fields(klass)}
    values, bad = {}, len(problems)
    for key in raw:
        if key not in flds:
            problems.append(f"unknown key '{name}.{key}'{_suggest(key, list(flds))}")
            continue
        spec = flds[key].metadata["spec"]
        try:
            if spec[0] == "path":  # a file or folder; "" = none
                value = raw[key]
                ok = isinstance(value, str) and not value.strip()
                values[key] = "" if ok else str(_path(value, f"{name}.{key}", base, env))
            else:
                values[key] = _check(f"{name}.{key}", raw[key], spec)
        except ConfigError as exc:
            problems.append(exc.message)
    return klass(**values) if len(problems) == bad else None


def _check(key: str, value: Any, spec: tuple[Any, ...]) -> Any:
    kind = spec[0]
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or not spec[1] <= value <= spec[2]:
            raise ConfigError(
                f"{key}: expected an integer from {spec[1]} to {spec[2]}, got {describe(value)}"
            )
        return value
    if kind == "float":
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not spec[1] <= value <= spec[2]
        ):
            raise ConfigError(
                f"{key}: expected a number from {spec[1]} to {spec[2]}, got {describe(value)}"
            )
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {describe(value)}")
        return value
    if kind in ("str", "name"):
        if not isinstance(value, str) or (kind == "name" and not value.strip()):
            raise ConfigError(f"{key}: expected a string, got {describe(value)}")
        return value
    if kind == "choice":
        if not isinstance(value, str) or value.lower() not in spec[1]:
            raise ConfigError(f"{key}: expected one of {', '.join(spec[1])}, got {describe(value)}")
        return value.lower()
    if kind == "globs":  # gitignore patterns (pathspec), checked here so a bad one stops startup
        if not isinstance(value, list) or not all(isinstance(g, str) and g.strip() for g in value):
            raise ConfigError(
                f"{key}: expected a list of gitignore patterns, got {describe(value)}"
            )
        for g in value:
            try:
                ok = GitIgnoreSpec.from_lines([g]).patterns[0].include is not None
            except ValueError:
                ok = False
            if not ok:  # '#...' is a comment, '[' unclosed, '!' alone: none can match a file
                raise ConfigError(f"{key}: {g!r} is not a gitignore pattern that can match a file")
        return list(value)
    if kind == "duration":
        try:
            seconds = parse_duration(value, what=key)
        except InvalidInput as exc:
            raise ConfigError(exc.message) from None
        # A job every millisecond would hold the writer and the CPU; an interval of centuries
        # overflows the scheduler's timedelta (a traceback at startup).
        low = MIN_JOB_INTERVAL if key.startswith("jobs.") else 0.0
        if not low <= seconds <= MAX_DURATION:
            raise ConfigError(
                f"{key}: expected a duration from {low:g}s to 3650d, got {describe(value)}"
            )
        return seconds
    if kind == "dsn":
        # A libpq connection string or URI. The password never lives in the config file: it
        # comes from PGPASSWORD, ~/.pgpass (PGPASSFILE) or store.password_file.
        if not isinstance(value, str):
            raise ConfigError(
                f"{key}: expected a PostgreSQL connection string, got {describe(value)}"
            )
        check_dsn(value, key)
        return value
    if kind == "relpath":
        if (
            not isinstance(value, str)
            or not value.strip()
            or home_or_absolute(value)  # `~/journal` is not in the workspace
            or ".." in Path(value).parts
        ):
            raise ConfigError(
                f"{key}: expected a folder inside the workspace, got {describe(value)}"
            )
        return value
    if kind == "logname":
        # A strftime pattern for the daily log's file name inside dailylog.folder (it may add
        # sub-folders, as Obsidian's "YYYY/MM/YYYY-MM-DD" does).
        if (
            not isinstance(value, str)
            or not value.endswith(".md")
            or home_or_absolute(value)
            or ".." in Path(value).parts
            or "%" not in value
        ):
            raise ConfigError(
                f"{key}: expected a strftime pattern for a .md file name like '%Y-%m-%d.md', "
                f"got {describe(value)}"
            )
        return value
    if kind == "format":
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {describe(value)}")
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc}") from None
        unknown = names - FORMAT_FIELDS
        if unknown:
            raise ConfigError(
                f"{key}: unknown placeholder {{{sorted(unknown)[0]}}} "
                f"(allowed: {', '.join(sorted(FORMAT_FIELDS))})"
            )
        return value
    raise AssertionError(kind)


# --- loading -----------------------------------------------------------------------------------


def find_config_file(
    explicit: Path | None = None, env: Mapping[str, str] | None = None
) -> Path | None:
    env = os.environ if env is None else env
    for candidate, what in ((explicit, "--config"), (env.get("MEMORYD_CONFIG"), "MEMORYD_CONFIG")):
        if candidate:
            # read as every path setting is ($VARS, ~: an MCP client's env or a unit's
            # Environment= line runs no shell); absolute: relative paths in it are relative to
            # its folder, and a reload reads the same file whatever the working directory is
            text = _expand_vars(str(candidate), what, env)
            p = Path(os.path.abspath(expand_home(text, what, env)))
            if not p.is_file():
                raise ConfigError(f"{what}: no configuration file at {p}")
            return p
    try:
        base = xdg("XDG_CONFIG_HOME", env) or expand_home("~/.config", "XDG_CONFIG_HOME", env)
    except ConfigError:  # no home folder: no file there (the paths that need one say so)
        return None
    p = Path(base) / "memoryd" / "config.toml"
    return p if p.is_file() else None


def _env_value(raw: str, spec: tuple[Any, ...]) -> Any:
    kind = spec[0]
    if kind == "bool":
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        return raw
    if kind == "int":
        try:
            return int(raw)
        except ValueError:
            return raw
    if kind == "float":
        try:
            return float(raw)
        except ValueError:
            return raw
    if kind == "globs":
        return [g.strip() for g in raw.split(",") if g.strip()]
    return raw


def env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings the MEMORYD_* variables override. A variable set empty (`MEMORYD_SOCKET=`, a
    unit's `Environment=` line with nothing after it) is unset, as memoryctl and `memoryd mcp`
    read theirs (`${VAR:-default}`): every MEMORYD_* variable means the same to every door."""
    out: dict[str, Any] = {}
    for var, raw in env.items():
        if not var.startswith("MEMORYD_") or var == "MEMORYD_CONFIG" or not raw:
            continue
        rest = var[len("MEMORYD_") :].lower()
        if rest in TOP_LEVEL:
            out[rest] = raw
            continue
        section, _, key = rest.partition("_")
        if section not in SECTIONS:
            continue
        flds = {f.name: f for f in fields(SECTIONS[section])}
        if key not in flds:
            names = [f"MEMORYD_{section.upper()}_{name.upper()}" for name in flds]
            raise ConfigError(f"{var}: unknown key '{section}.{key}'{_suggest(var, names)}")
        out.setdefault(section, {})[key] = _env_value(raw, flds[key].metadata["spec"])
    return out


# MEMORYD_* variables read elsewhere: the clients' (memoryctl, memoryd mcp) and the test suite's
OTHER_ENV = frozenset(
    {"MEMORYD_CONFIG", "MEMORYD_SOCKET", "MEMORYD_NAMESPACE", "MEMORYD_MCP_PREFIX"}
)


def env_names() -> list[str]:
    """Every variable that overrides a setting: MEMORYD_WORKSPACE, ..., MEMORYD_LOGGING_LEVEL."""
    names = [f"MEMORYD_{key.upper()}" for key in TOP_LEVEL]
    for section, klass in SECTIONS.items():
        names += [f"MEMORYD_{section.upper()}_{f.name.upper()}" for f in fields(klass)]
    return names


def unread_env(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The MEMORYD_* variables nothing reads, each with the closest one that is read (or ""): a
    misspelt section
    (MEMORYD_LOG_LEVEL) was ignored without a word, while a misspelt key stops startup."""
    env = os.environ if env is None else env
    known = env_names()
    out = []
    for var in sorted(env):
        if not var.startswith("MEMORYD_") or var in OTHER_ENV or var.startswith("MEMORYD_TEST_"):
            continue
        if not env[var]:  # set empty: unset (env_overrides)
            continue
        rest = var[len("MEMORYD_") :].lower()
        if rest in TOP_LEVEL or rest.partition("_")[0] in SECTIONS:
            continue  # read (a misspelt key there is a ConfigError)
        close = difflib.get_close_matches(var, known, n=1)
        out.append((var, close[0] if close else ""))
    return out


def doubtful(cfg: Config) -> list[str]:
    """Valid settings that are most likely a mistake, said as warnings (`memoryd config check`,
    the daemon's log at start and reload): `include = []` made every note leave the index
    without a word."""
    out = []
    if not cfg.indexer.include:
        out.append(
            "indexer.include is empty: no workspace file is a note, and the notes indexed "
            "so far leave the index (memories stay)"
        )
    return out


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    found = find_config_file(path, env)
    data: dict[str, Any] = {}
    text = ""
    if found is not None:
        try:
            raw = found.read_bytes()
            text = raw.decode("utf-8-sig")  # a byte order mark (Notepad's) is no error
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(toml_error(found, text, exc)) from None
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise ConfigError(
                f"{found}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8"
            ) from None
        except OSError as exc:
            raise ConfigError(f"{found}: cannot read: {exc}") from None
    for key, value in env_overrides(env).items():
        if isinstance(value, dict):
            section = data.setdefault(key, {})
            if isinstance(section, dict):
                section.update(value)
        else:
            data[key] = value
    try:
        cfg = Config.from_dict(data, base_dir=found.parent if found else None, env=env)
        if found is not None:
            cfg.check_log_file(found, found.resolve())
        if cfg.store.backend == "postgres" and cfg.store.password_file:
            read_password_file(Path(cfg.store.password_file))  # readable, and by you alone
    except ConfigError as exc:  # each problem with the file and line, or the variable, it is in
        problems = (exc.data or {}).get("problems") or [exc.message]
        located = locate(problems, found, text, env)
        raise ConfigError("; ".join(located), data={"problems": located}) from None
    return dataclasses.replace(cfg, source=found)


# --- reload ------------------------------------------------------------------------------------

RELOADABLE: frozenset[str] = frozenset(
    {
        "logging.level",
        "logging.format",
        "indexer.include",
        "indexer.exclude",
        "indexer.skip_hidden",
        "indexer.skip_tool_files",
        "indexer.debounce_ms",
        "dailylog.enabled",
        "dailylog.line_format",
        "dailylog.header",
        "notes.max_bytes",
        "server.idle_timeout_s",
        "server.first_request_timeout_s",
        "server.request_timeout_s",
    }
    | {f"search.{f.name}" for f in fields(SearchConfig)}
    | {f"jobs.{f.name}" for f in fields(JobsConfig)}
    | {f"memories.{f.name}" for f in fields(MemoriesConfig)}
    | {f"lifecycle.{f.name}" for f in fields(LifecycleConfig)}
    | {f"secrets.{f.name}" for f in fields(SecretsConfig)}
)


def diff(old: Config, new: Config) -> list[tuple[str, Any, Any]]:
    changes: list[tuple[str, Any, Any]] = []
    for key in TOP_LEVEL:
        if getattr(old, key) != getattr(new, key):
            changes.append((key, getattr(old, key), getattr(new, key)))
    for name in SECTIONS:
        a, b = getattr(old, name), getattr(new, name)
        for f in fields(a):
            va, vb = getattr(a, f.name), getattr(b, f.name)
            if va != vb:
                changes.append((f"{name}.{f.name}", va, vb))
    return changes


def needs_restart(changes: list[tuple[str, Any, Any]]) -> list[str]:
    return [key for key, _, _ in changes if key not in RELOADABLE]


def to_toml(cfg: Config) -> str:
    """The configuration as a TOML document that tomllib reads back into the same Config
    (tomli-w escapes newlines, quotes, backslashes and control characters; a `$` in a path
    is written `$$`, as it is read)."""
    data = cfg.as_dict()
    for key in TOP_LEVEL:
        data[key] = data[key].replace("$", "$$")
    for name, key in _section_paths():
        data[name][key] = data[name][key].replace("$", "$$")
    return tomli_w.dumps(data)


def _section_paths() -> list[tuple[str, str]]:
    """(section, key) of every path setting inside a section (`("path",)` in sections.py):
    logging.file, embedding.model_path, store.password_file."""
    return [
        (name, f.name)
        for name, klass in SECTIONS.items()
        for f in fields(klass)
        if f.metadata["spec"][0] == "path"
    ]
