"""Shared fixtures: everything points at tmp dirs; daemons are real processes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import isolation
import pytest

from memoryd.core import logsetup
from memoryd.search.searcher import SearchRequest

ROOT = Path(__file__).resolve().parent.parent


def q(app: Any, query: str, **kw: Any) -> dict[str, Any]:
    return app.searcher.search(SearchRequest(query=query, **kw))


@contextlib.contextmanager
def pg_stores(dsn: str, *workspaces: str, **settings: Any) -> Iterator[tuple[Any, ...]]:
    """A PgStore per workspace on the database `dsn` (two daemons sharing it), closed after."""
    from memoryd.store.pg import PgSettings, PgStore

    made: list[Any] = []
    try:
        for w in workspaces:
            made.append(PgStore(PgSettings(dsn, w, f"test:{w}", **settings)))
        yield tuple(made)
    finally:
        for store in made:
            store.close()


# A few notes and queries the PostgreSQL search tests share (test_pg_searchrows, test_pg_carry,
# test_pg_sharedvec): code, prose, a phrase, a prefix and a CJK note.
SEARCH_TEXTS = {
    "ops/deploy.md": "# Deploy\n\nWe deploy the api with blue green releases and a canary.\n\n"
    "## Rollback\n\nA failed deploy rolls back to the last green release.\n",
    "ops/incident.md": "# Incident\n\nThe canary failed; the deploy was rolled back.\n",
    "proj/auth.md": "# Auth\n\nSessions expire after twelve hours; tokens rotate daily.\n",
    "proj/cache.md": "# Cache\n\nRedis keeps hot sessions and the deploy keys.\n",
    "notes/cjk.md": "# 数据库\n\n数据库的备份每天运行一次。deploy 之前先备份。\n",
}
SEARCH_QUERIES = [
    "deploy",
    "deploy canary",
    "sessions redis",
    '"green release"',
    "deploy*",
    "数据库 备份",
]


def pg_search_app(make_app: Any, dsn: str) -> Any:
    """An app on PostgreSQL holding SEARCH_TEXTS and a team memory, settled (the PostgreSQL
    search tests' fixture)."""
    app = with_notes(make_app(store={"backend": "postgres", "dsn": dsn}), SEARCH_TEXTS)
    app.memories.add("Deploys happen on tuesdays", tags=["deploy"], namespace="team")
    settle(app)
    return app


def with_notes(app: Any, texts: dict[str, str]) -> Any:
    """`app` with these notes (workspace-relative path -> text) written and indexed, their
    entities read."""
    for rel, text in texts.items():
        path = Path(app.cfg.workspace) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    app.indexer.reconcile()
    entities_caught_up(app)
    return app


def settle(app: Any) -> None:
    app.model.start()
    assert app.model.wait_ready(10), app.model.reason
    app.embedder.run()
    assert app.embedder.counts()["pending"] == 0
    entities_caught_up(app)


def migrations_before(monkeypatch: pytest.MonkeyPatch, module: Any, step: Any) -> None:
    """Stores opened from now on migrate only up to `step`, not including it: an older store.
    `module` holds the backend's MIGRATIONS (memoryd.store.migrations, memoryd.store.pg.schema);
    `monkeypatch.undo()` gives the newer ones back."""
    steps = module.MIGRATIONS
    monkeypatch.setattr(module, "MIGRATIONS", steps[: steps.index(step)])
    pg = module.__name__.endswith("schema")
    before = [s.__name__ for s in steps[: steps.index(step)]]
    columns = sum(
        name in before
        for name in (
            ("_v11_paired", "_v12_declared", "_v16_mention_types")
            if pg
            else ("m012_paired", "m013_declared", "m018_mention_types")
        )
    )
    from memoryd.store import entities

    if ("_v14_front_matter_values" if pg else "m015_front_matter_values") not in before:
        # no `props` column: notes' front-matter values are not indexed, the keyword rows hold
        # the tags alone (store/tables.py)
        from memoryd.store import tables
        from memoryd.text import notehead

        monkeypatch.setattr(tables, "keyword_tags", lambda row: f"{row}.tags")
        monkeypatch.setattr(notehead, "props", lambda path, fm, body: (None, None))

    if columns < entities.COLUMNS:
        # today's mention writes and reads in that schema: no `paired` column
        # (store/entitypairs.py), no `declared` (store/firstnames.py), no `type`
        # (store/entitytypes.py)
        for name, at in (("_store", 3), ("known_as", 2), ("adopt_first_names", 2), ("adopt", 3)):
            monkeypatch.setattr(entities, name, _in_schema(getattr(entities, name), at, columns))
        # nor claims to withdraw (store/entityclaims.py reads `declared`)
        from memoryd.store import entityclaims

        monkeypatch.setattr(entityclaims, "held_by", lambda con, sql, params: set())

    if ("_v20_entity_pending" if pg else "m022_entity_pending") not in before:
        # no `entity_pending` table: a note's entities are read as it is indexed, as they were
        # (store/entitystage.py)
        from memoryd.index import indexer
        from memoryd.store import entitystage

        monkeypatch.setattr(indexer, "entities_later", entitystage.index_now)
        monkeypatch.setattr(entitystage, "pending", lambda con: 0)
        monkeypatch.setattr(entitystage, "held_of", lambda con, path: set())

    marks = "_v13_log_marks" if pg else "m014_log_marks"
    if marks not in before:
        # no `log_marks` table in that schema (store/logmarks.py)
        from memoryd.store import logmarks

        monkeypatch.setattr(logmarks, "replace", lambda con, path, ids: None)
        monkeypatch.setattr(logmarks, "paths_naming", lambda con, ids: set())


def _in_schema(f: Callable[..., Any], at: int, columns: int) -> Callable[..., Any]:
    """`f` called with its `columns` argument (positional at `at`) set to `columns`."""

    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("columns", None)
        return f(*args[:at], columns=columns, **kwargs)

    return call


def older_store(
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    backend: str,
    sqlite_step: str,
    pg_step: str,
) -> dict[str, Any]:
    """make_app's store settings for `backend`, whose stores opened from now on migrate only up
    to the named step (memoryd.store.migrations' on SQLite, pg.schema's on PostgreSQL), not
    including it: an older store. `monkeypatch.undo()` gives the newer steps back."""
    if backend == "postgres":
        from memoryd.store.pg import schema

        migrations_before(monkeypatch, schema, getattr(schema, pg_step))
        return {"store": {"backend": "postgres", "dsn": request.getfixturevalue("pg_dsn")}}
    from memoryd.store import migrations

    migrations_before(monkeypatch, migrations, getattr(migrations, sqlite_step))
    return {}


def indexed_by_older(make_app: Any, store: dict[str, Any], files: dict[str, str]) -> None:
    """An older store (older_store's settings) that indexed and embedded `files` (workspace
    path -> text), then closed: what an upgrade finds."""
    old = make_app(**store)
    root = Path(old.cfg.workspace)
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).write_text(text)
    old.indexer.reconcile()
    settle(old)
    old.close()


def doc_commands(doc: Path, marker: str) -> list[str]:
    """The commands of the ```sh block after `<!-- sh:MARKER -->` in `doc`, one a line, as a
    reader would type them (trailing `# comments` and blank lines left out)."""
    text = doc.read_text(encoding="utf-8")
    found = re.search(rf"<!-- sh:{re.escape(marker)}[ -]", text)
    assert found, f"no <!-- sh:{marker} --> block in {doc}"
    start = text.index("```sh\n", found.start()) + 6
    block = text[start : text.index("```", start)]
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [line for line in lines if line]


def write_synced(app: Any, rel: str, text: str) -> None:
    """Write a note into the app's workspace and index it as the watcher would (sync_paths)."""
    path = Path(app.cfg.workspace) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    app.indexer.sync_paths([path])
    entities_caught_up(app)


def entities_caught_up(app: Any) -> None:
    """The notes indexed so far have their entities (store/entitystage.py: the daemon's stage
    thread does it; an app of a test has none running)."""
    from memoryd.store import entitystage

    assert entitystage.store_caught_up(app.store) == 0


# A deadline bounds a hang; it is not a speed target (those are in the bench suite). CI's two
# cores, busy with the rest of the suite, have taken over 10 s for what takes 50 ms on an idle
# machine (a daemon subprocess noticing a file and indexing it on PostgreSQL), so no deadline is
# shorter than this: wait_for's, and every wait a test makes for something that should happen
# (an event, a subprocess's first answer). A condition that holds returns at once.
DEADLINE_S = 30.0


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll until predicate() is truthy; fail with a clear message at the deadline (at least
    DEADLINE_S)."""
    timeout = max(timeout, DEADLINE_S)
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


# -- never the developer's memoryd (tests/isolation.py) -----------------------------------------

_GUARD = pytest.StashKey[isolation.Guard]()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported, in the xdist controller and in every worker: HOME,
    the XDG folders and TMPDIR are new folders of this process's own. pytest's tmp_path stays
    where pytest puts it (chosen first, under the real temp dir): a folder nested in the new
    TMPDIR made socket paths in it too long for AF_UNIX."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        base = factory.getbasetemp()
        if not hasattr(config, "workerinput"):  # the controller: its workers inherit it
            _bytecode_cache(base / "pycache")
    config.stash[_GUARD] = isolation.isolate()


def _bytecode_cache(folder: Path) -> None:
    """Under PYTHONDONTWRITEBYTECODE=1 (set in many container images; a fresh clone has no
    __pycache__) every `memoryd run` and `memoryctl` a test started compiled memoryd from its
    source again: 0.6-0.9 s of each daemon's 1.5-2 s start at load 8. The suite's processes
    (workers, their subprocesses) write and read compiled modules in this session's tmp folder
    instead (PYTHONPYCACHEPREFIX): the source tree stays as clean as the variable asks."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ["PYTHONPYCACHEPREFIX"] = str(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    guard = config.stash.get(_GUARD, None)
    if guard is not None:
        isolation.remove(guard)


@pytest.fixture(autouse=True)
def _never_the_real_memoryd(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the test in which this process, or a Python process it started, tried to reach the
    developer's daemon or its default folders (refused by isolation's audit hook)."""
    guard = request.config.stash[_GUARD]
    seen = len(guard.refused())
    yield
    refused = guard.refused()[seen:]
    if refused:
        pytest.fail(f"this test tried to touch the real memoryd: {refused}")


@pytest.fixture(autouse=True)
def fresh_logging() -> Iterator[None]:
    """A test that configures logging (the daemon, the bench) leaves none of it behind."""
    yield
    logsetup.reset()


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's config, data or runtime dirs: and each test has a config
    and data home of its own (created, beside its tmp_path, which some tests list)."""
    for key in list(os.environ):
        if key.startswith("MEMORYD_") or key in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID"):
            monkeypatch.delenv(key, raising=False)
    for var, name in (("XDG_CONFIG_HOME", "xdg-config"), ("XDG_DATA_HOME", "xdg-data")):
        monkeypatch.setenv(var, str(tmp_path_factory.mktemp(name)))


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short path for sockets (AF_UNIX paths are limited to ~104 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="md-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _stop_postgres() -> Iterator[None]:
    """The tests' PostgreSQL server (tests/pgserver.py) stops with the session."""
    yield
    import pgserver

    pgserver.stop()


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    """A new, empty PostgreSQL database (with pgvector available) for this test."""
    import pgserver

    dsn = pgserver.fresh_dsn()
    yield dsn
    pgserver.drop(dsn)


# -- the API suite on both backends ----------------------------------------------------------
#
# A test module marked `pytestmark = pytest.mark.backends` runs each of its tests that builds an
# App or a daemon (through `config_dict`: `make_app`, `daemon_factory`) twice: `test_x[sqlite]`
# and `test_x[postgres]`, the latter on an empty database of its own on the session's embedded
# server (tests/pgserver.py: fresh_dsn(migrated=True), emptied and reused after the test). A
# test that cannot apply to PostgreSQL says why: `@pytest.mark.sqlite_only("reason")`.
# MEMORYD_TEST_BACKEND=sqlite|postgres|both (default both) narrows a run to one variant.

BACKENDS = ("sqlite", "postgres")


def selected_backends() -> list[str]:
    value = os.environ.get("MEMORYD_TEST_BACKEND", "both").strip().lower() or "both"
    if value == "both":
        return list(BACKENDS)
    if value not in BACKENDS:
        raise pytest.UsageError(
            f"MEMORYD_TEST_BACKEND: expected sqlite, postgres or both, got {value!r}"
        )
    return [value]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("backends") is None:
        return
    only = metafunc.definition.get_closest_marker("sqlite_only")
    if only is not None:
        if not (only.args or only.kwargs.get("reason")):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: sqlite_only needs a reason")
        return
    metafunc.parametrize("backend", selected_backends(), indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Counts the API suite's variants for the summary; MEMORYD_TEST_BACKEND=postgres leaves
    out the SQLite-only tests of the API modules too."""
    params = [getattr(getattr(i, "callspec", None), "params", {}) for i in items]
    config.stash[_COUNTS] = (
        sum(p.get("backend") == "postgres" for p in params),
        sum(
            bool(i.get_closest_marker("backends") and i.get_closest_marker("sqlite_only"))
            for i in items
        ),
    )
    if selected_backends() != ["postgres"]:
        return
    keep, drop = [], []
    for item in items:
        if item.get_closest_marker("backends") and item.get_closest_marker("sqlite_only"):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


_COUNTS = pytest.StashKey[tuple[int, int]]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the counts go to the controller's summary
        workeroutput["api_counts"] = session.config.stash.get(_COUNTS, (0, 0))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist, in the controller: every worker collected the same tests."""
    counts = getattr(node, "workeroutput", {}).get("api_counts")
    if counts is not None:
        node.config.stash[_COUNTS] = tuple(counts)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    postgres, sqlite_only = config.stash.get(_COUNTS, (0, 0))
    if postgres or sqlite_only:
        terminalreporter.write_line(
            f"API suite: {postgres} tests collected on PostgreSQL; {sqlite_only} marked "
            "sqlite_only (list them: pytest -m sqlite_only --collect-only -q)"
        )


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The store backend this test runs on: "sqlite" unless parametrised (see above)."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def config_dict(tmp_path: Path, short_dir: Path, backend: str) -> Iterator[dict[str, Any]]:
    cfg: dict[str, Any] = {
        "workspace": str(tmp_path / "ws"),
        "data_dir": str(tmp_path / "data"),
        "socket": str(short_dir / "s.sock"),
        "indexer": {"debounce_ms": 100},
        "embedding": {"allow_download": False},
        "logging": {"level": "debug"},
    }
    if backend != "postgres":
        yield cfg
        return
    import pgserver

    dsn = pgserver.fresh_dsn("api", migrated=True)
    cfg["store"] = {"backend": "postgres", "dsn": dsn}
    yield cfg
    pgserver.release(dsn)


@pytest.fixture
def new_store(backend: str) -> Iterator[Callable[[], dict[str, Any]]]:
    """`make_app(store=new_store(), data_dir=...)`: a store of its own for an App that must
    not share config_dict's (on SQLite a new data_dir is enough; on PostgreSQL, where the
    data lives in the database, it is another database of its own)."""
    made: list[str] = []

    def new() -> dict[str, Any]:
        if backend != "postgres":
            return {}
        import pgserver

        made.append(pgserver.fresh_dsn("api", migrated=True))
        return {"backend": "postgres", "dsn": made[-1]}

    def release(store: dict[str, Any]) -> None:
        """Give a store back before the test ends (its Apps closed): the next one reuses it."""
        if store.get("dsn") in made:
            import pgserver

            made.remove(store["dsn"])
            pgserver.release(store["dsn"])

    new.release = release  # type: ignore[attr-defined]
    yield new
    if made:
        import pgserver

        for dsn in made:
            pgserver.release(dsn)


@pytest.fixture
def make_app(config_dict: dict[str, Any]) -> Iterator[Callable[..., Any]]:
    """Build Apps on tmp dirs with the fake embedder, no model (None), the real offline model
    ("real": the test is skipped where it is not installed) or a given holder; closes them."""
    from memoryd.core.config import Config
    from memoryd.index.embed import FakeEmbedder, ModelHolder
    from memoryd.serve.app import App, default_model_holder

    apps: list[Any] = []

    def make(model: Any = "fake", **sections: Any) -> Any:
        data = json.loads(json.dumps(config_dict))
        for key, value in sections.items():
            if isinstance(value, dict):
                data.setdefault(key, {}).update(value)
            else:
                data[key] = value
        cfg = Config.from_dict(data)
        if model == "fake":
            fake = FakeEmbedder()
            holder = ModelHolder(lambda: fake, description="fake embedder")
            holder.fake = fake  # type: ignore[attr-defined]
        elif model is None:
            holder = ModelHolder(None, description="no model (test)")
        elif model == "real":
            holder = default_model_holder(cfg)
            if holder.state == "none":
                pytest.skip(f"offline model not installed: {holder.reason}")
        else:
            holder = model
        app = App(cfg, model=holder)
        apps.append(app)
        return app

    def close(app: Any) -> None:
        """Close an App before the test ends (a property-based test makes two per example)."""
        apps.remove(app)
        app.close()

    make.close = close  # type: ignore[attr-defined]
    yield make
    for app in apps:
        app.close()


@contextlib.contextmanager
def apps_apart(
    make_app: Any, new_store: Any, names: tuple[str, ...], **sections: Any
) -> Iterator[list[Any]]:
    """Apps with data folders and stores of their own (one workspace between them) for one
    example of a property-based test: closed, their databases given back and their folder
    removed when the block ends, not when the test does (15-20 examples' PostgreSQL
    connections held to the end ran the test server out of them under CI's load)."""
    base = Path(tempfile.mkdtemp(prefix="apart-"))
    stores = [new_store() for _ in names]
    apps: list[Any] = []
    try:
        for name, store in zip(names, stores, strict=True):
            apps.append(
                make_app(
                    **sections, workspace=str(base / "ws"), data_dir=str(base / name), store=store
                )
            )
        yield apps
    finally:
        for app in apps:
            make_app.close(app)
        for store in stores:
            new_store.release(store)
        shutil.rmtree(base, ignore_errors=True)


def rpc(sock_path: Path | str, method: str, params: dict | None = None, timeout: float = 30) -> Any:
    """One JSON-RPC call over the daemon's socket; returns the whole response object."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock_path))
        req = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            part = s.recv(65536)
            if not part:
                break
            buf += part
    return json.loads(buf)


class DaemonProcess:
    def __init__(self, config_path: Path, cfg: dict[str, Any], env: dict[str, str]) -> None:
        self.config_path = config_path
        self.cfg = cfg
        self.socket = Path(cfg["socket"])
        self.workspace = Path(cfg["workspace"])
        self.env = env
        self.log_path = config_path.parent / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True) -> DaemonProcess:
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "run", "--config", str(self.config_path)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=str(ROOT),
        )
        if wait:
            wait_for(self.answers, timeout=30)
        return self

    def answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.log()}")
        try:
            return rpc(self.socket, "ping", timeout=2).get("result", {}).get("pong") is True
        except OSError:
            return False

    def call(self, method: str, params: dict | None = None) -> Any:
        resp = rpc(self.socket, method, params)
        if "error" in resp:
            raise AssertionError(f"{method} failed: {resp['error']}")
        return resp["result"]

    def ctl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memoryd.ctl", "--socket", str(self.socket), *args],
            capture_output=True,
            text=True,
            input=input,
            env=self.env,
            timeout=60,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


@pytest.fixture
def daemon_factory(
    tmp_path: Path, config_dict: dict[str, Any]
) -> Iterator[Callable[..., DaemonProcess]]:
    """Start `memoryd run` as a real subprocess on tmp dirs (keyword mode unless model=True)."""
    procs: list[DaemonProcess] = []

    def start(
        model: bool = False, wait: bool = True, extra_env: dict | None = None, **sections: Any
    ) -> DaemonProcess:
        cfg = json.loads(json.dumps(config_dict))
        cfg["logging"] = {"level": "debug", "format": "json"}
        cfg.setdefault("embedding", {})["enabled"] = model
        for key, value in sections.items():
            if isinstance(value, dict):
                cfg.setdefault(key, {}).update(value)
            else:
                cfg[key] = value
        path = tmp_path / f"config-{len(procs)}.toml"
        path.write_text(to_toml(cfg))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
        env.update(extra_env or {})
        d = DaemonProcess(path, cfg, env).start(wait=wait)
        procs.append(d)
        return d

    yield start
    for d in procs:  # a daemon that exited by itself (refused to start) closes its log too
        if d.proc is not None:
            d.stop(signal.SIGKILL)


@pytest.fixture
def team(make_app: Any, pg_dsn: str, tmp_path: Path) -> Callable[[str], Any]:
    """team(name): an App of its own (workspace, data dir, socket) on the shared database;
    without a daily log unless `dailylog` says otherwise."""

    def make(name: str, model: Any = None, **sections: Any) -> Any:
        base = tmp_path / name
        return make_app(
            model=model,
            workspace=str(base / "ws"),
            data_dir=str(base / "data"),
            socket=str(base / "s.sock"),
            store={"backend": "postgres", "dsn": pg_dsn, "workspace_id": name},
            **{"dailylog": {"enabled": False}, **sections},
        )

    return make


def texts_of(chars: str, max_size: int, *, lines: bool = True) -> Any:
    """Hypothesis texts drawn often from `chars` (the characters the rule under test turns on)
    and from any other character (no surrogate; no newline unless `lines`)."""
    from hypothesis import strategies as st

    other = st.characters(exclude_categories=["Cs"], exclude_characters="" if lines else "\n")
    return st.text(alphabet=st.one_of(st.sampled_from(list(chars)), other), max_size=max_size)


def slow_model() -> tuple[Any, threading.Event]:
    """A fake model holder whose load waits (at most 30 s) until the event is set: a daemon in
    its first seconds, the model still loading."""
    from memoryd.index.embed import FakeEmbedder, ModelHolder

    release = threading.Event()

    def load() -> FakeEmbedder:
        release.wait(30)
        return FakeEmbedder()

    return ModelHolder(load, description="a model that loads slowly"), release


@contextlib.contextmanager
def module_daemon(
    tmp_path_factory: pytest.TempPathFactory, name: str, notes: dict[str, str]
) -> Iterator[DaemonProcess]:
    """A real daemon (keyword mode) on tmp dirs for a whole module's tests, its workspace
    holding `notes` (daemon_factory is function-scoped); killed and cleaned up after."""
    base = tmp_path_factory.mktemp(name)
    short = tempfile.mkdtemp(prefix=f"md{name[:2]}-", dir="/tmp")
    ws = base / "ws"
    ws.mkdir()
    for rel, text in notes.items():
        (ws / rel).write_text(text)
    cfg = {
        "workspace": str(ws),
        "data_dir": str(base / "data"),
        "socket": f"{short}/s.sock",
        "embedding": {"enabled": False},
        "logging": {"level": "info"},
    }
    (base / "config.toml").write_text(to_toml(cfg))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    d = DaemonProcess(base / "config.toml", cfg, env).start()
    try:
        yield d
    finally:
        d.stop(signal.SIGKILL)
        shutil.rmtree(short, ignore_errors=True)


# Loaded by a daemon started with held_scan's environment: the isolation guard first (this file
# shadows tests/guard_site's), then an indexer that waits before each file while the hold file
# exists, until memoryd stops (Indexer.stopping, set by App.close).
_HOLD_SITE = """
import importlib.util
import os
import time
from pathlib import Path

_spec = importlib.util.spec_from_file_location("mdtest_guard", {guard!r})
_spec.loader.exec_module(importlib.util.module_from_spec(_spec))


def _hold(hold):
    from memoryd.index import indexer

    index_one = indexer.Indexer._index_one

    def held(self, state, by_sha, report):
        while hold.exists() and not self.stopping.is_set():
            time.sleep(0.01)
        return index_one(self, state, by_sha, report)

    indexer.Indexer._index_one = held


if os.environ.get("MDTEST_HOLD_SCAN"):  # (not in a memoryctl the test starts: HELD_ENV)
    _hold(Path(os.environ["MDTEST_HOLD_SCAN"]))
"""
HELD_ENV = "MDTEST_HOLD_SCAN"


def held_scan(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """(extra_env for daemon_factory, the hold file): while the hold file exists, that daemon's
    indexer waits before each file (a scan or a reindex in progress, as long as the test needs,
    without the thousands of notes that took 10-35 s to index), until it stops: a stop cuts
    the wait short as it does a scan. Created held; `unlink()` it to let the scan go on. A
    memoryctl the test starts gets the daemon's environment without HELD_ENV."""
    site = tmp_path / "hold-site"
    site.mkdir(exist_ok=True)
    guard = isolation.GUARD_SITE / "sitecustomize.py"
    (site / "sitecustomize.py").write_text(_HOLD_SITE.format(guard=str(guard)))
    hold = tmp_path / "hold"
    hold.touch()
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH") or str(ROOT)])
    return {"PYTHONPATH": path, HELD_ENV: str(hold)}, hold


def to_toml(data: dict[str, Any]) -> str:
    """A test config as TOML."""
    import tomli_w

    return tomli_w.dumps(data)


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield

    def leaked() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t not in before and t.is_alive()]

    deadline = time.monotonic() + DEADLINE_S
    while leaked() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not leaked(), f"threads left running: {leaked()}"


def started_app(make_app: Any) -> Any:
    """An App without a model, started (no jobs) and its file watcher alive."""
    app = make_app(model=None)
    app.start(jobs=False)
    assert app.ready.wait(DEADLINE_S)
    wait_for(lambda: app.watcher is not None and app.watcher.alive)
    return app
