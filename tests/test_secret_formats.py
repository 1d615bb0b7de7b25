"""The secret guard on the credentials agents actually paste (walk of stop 37: secrets and
privacy): every common format is found and redacted whole, on every door that stores text, and
no log line carries one.

Found by the walk: `postgresql://user:pass@host`, `.env` lines (`DB_PASSWORD=...`,
`GITHUB_TOKEN=...`), JSON's `"password": "..."`, GitLab tokens and Slack webhooks were stored
(and written to the daily log) as they were; a private key's redaction kept its body."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from memoryd.core import logsetup
from memoryd.core.errors import Refused
from memoryd.serve import methods as api
from memoryd.text.secretguard import kinds, redact, redact_known

KEY_BODY = "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"

# (text, the secret in it, the kind found)
FORMATS = [
    ("key AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
    (
        "aws_secret_access_key = wJalrXUtnFEMIK7MDENG",
        "wJalrXUtnFEMIK7MDENG",
        "credential_assignment",
    ),
    ("ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2, "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2, "github_token"),
    ("token glpat-xK9f3Lm2Qw8ZrT5yB7nV", "glpat-xK9f3Lm2Qw8ZrT5yB7nV", "gitlab_token"),
    ("sk-proj-abcDEF123ghiJKL456mnoPQR789", "sk-proj-abcDEF123ghiJKL456mnoPQR789", "openai_key"),
    (
        "sk-ant-api03-abcdefghij0123456789-ABCD",
        "sk-ant-api03-abcdefghij0123456789",
        "anthropic_key",
    ),
    ("xoxb-1234567890-1234567890123-AbCdEfGh", "xoxb-1234567890-1234567890123", "slack_token"),
    (
        "hook https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX",
        "T0000/B0000/XXXXXXXXXXXXXXXX",
        "slack_webhook",
    ),
    ("sk_live_51Habcdefghijklmnopqrst", "sk_live_51Habcdefghijklmnopqrst", "stripe_key"),
    (
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "huggingface_token",
    ),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
        "jwt",
    ),
    (
        f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----\nafter",
        KEY_BODY,
        "private_key",
    ),
    (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}", KEY_BODY, "private_key"),  # cut off
    ("db postgresql://alice:hunter2pw@db.internal:5432/app", "hunter2pw", "url_password"),
    ("mongodb+srv://user:Passw0rd@cluster0.example.net/test", "Passw0rd", "url_password"),
    ("redis://:mypassword@localhost:6379/0", "mypassword", "url_password"),
    ("DB_PASSWORD=hunter2hunter", "hunter2hunter", "credential_assignment"),
    ("export GITHUB_TOKEN=abcdef123456", "abcdef123456", "credential_assignment"),
    ('{"password": "hunter2pw"}', "hunter2pw", "credential_assignment"),
    ("password: hunter2pw", "hunter2pw", "credential_assignment"),
    ("PGPASSWORD=hunter2hunter psql -h db", "hunter2hunter", "credential_assignment"),
    (
        'curl -H "Authorization: Bearer abcdef1234567890xyz"',
        "abcdef1234567890xyz",
        "authorization_header",
    ),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "authorization_header"),
    ("dop_v1_" + "a1" * 32, "a1" * 32, "digitalocean_token"),
]
IDS = [f"{k}-{i}" for i, (_, _, k) in enumerate(FORMATS)]

NOT_SECRETS = [
    "The password policy says at least 12 characters.",
    "We decided the secret: keep it simple.",
    "password: see 1Password vault",
    "see https://docs.python.org/3/library/os.html#os.chmod",
    "clone ssh://git@github.com/org/repo.git",
    "dsn = postgresql://memoryd@db.internal:5432/memoryd",
    "example: postgresql://user:password@host/db",  # what docs write
    "DB_PASSWORD=${DB_PASSWORD}",
    "password = <your password>",
    "max_tokens: 800000",
    'cfg.Passwd = os.Getenv("DBPASS")',  # code that reads a secret is not one
    "password = getpass()",
    'pad_token=str(padding.get("pad_token"))',
    '_TOKEN = re.compile(r"[A-Za-z0-9]{32,}")',
    '"mask_token": "[MASK]",',
    'token = os.environ["API_TOKEN"]',
    "Enter password:\n\nmysql> select 1;",  # a prompt, and the next line is not its value
    "commit 9c7d94f3b2a1e0d4c5b6a7f8e9d0c1b2a3f4e5d6 fixed it",
    "the Authorization: Bearer header carries the token",
    "Authorization: Bearer ${TOKEN}",
]


@pytest.mark.parametrize(("text", "secret", "kind"), FORMATS, ids=IDS)
def test_each_common_format_is_found_and_redacted_whole(text: str, secret: str, kind: str) -> None:
    assert kind in kinds(text)
    for out in (redact(text), redact_known(text)):
        assert secret not in out and f"[REDACTED:{kind}]" in out


def test_a_private_key_block_is_redacted_to_its_end_line_only() -> None:
    text = (
        f"before\n-----BEGIN EC PRIVATE KEY-----\n{KEY_BODY}\n-----END EC PRIVATE KEY-----\nafter"
    )
    assert redact(text) == "before\n[REDACTED:private_key]\nafter"


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_and_placeholders_are_not_credentials(text: str) -> None:
    assert kinds(text) == []


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


DOORS = ["add", "update", "import", "note.write", "note.append"]


def _through(app: Any, door: str, text: str, **extra: Any) -> Any:
    if door == "add":
        return call(app, "add", content=text, **extra)
    if door == "update":
        mid = call(app, "add", content="harmless text")["id"]
        return call(app, "update", id=mid, content=text, **extra)
    if door == "import":
        return call(app, "import", items=[{"content": text}], **extra)
    return call(app, door, path="walk.md", content=text + "\n", **extra)


@pytest.mark.backends
@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [FORMATS[3], FORMATS[13], FORMATS[16], FORMATS[11]],
    ids=["gitlab", "url_password", "env_line", "private_key"],
)
def test_every_door_refuses_the_formats_found_by_the_walk(
    make_app: Any, door: str, text: str, secret: str, kind: str
) -> None:
    app = make_app(model=None)
    with pytest.raises(Refused) as err:
        _through(app, door, text)
    assert kind in err.value.message and secret not in err.value.message
    assert secret not in json.dumps(err.value.data)


@pytest.mark.backends
@pytest.mark.parametrize(("text", "secret", "kind"), FORMATS, ids=IDS)
def test_the_daily_log_never_holds_the_secret_even_when_allowed(
    make_app: Any, text: str, secret: str, kind: str
) -> None:
    app = make_app(model=None)
    call(app, "add", content=text, allow_secrets=True)
    daily = "".join(p.read_text() for p in app.cfg.workspace.rglob("*.md"))
    assert daily and secret not in daily and f"[REDACTED:{kind}]" in daily


@pytest.mark.backends
def test_redact_mode_stores_the_redacted_text(make_app: Any) -> None:
    app = make_app(model=None, secrets={"mode": "redact"})
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"
    rec = call(app, "add", content=f"db postgresql://a:hunter2pw@h/x and key {text}")
    content = call(app, "get", id=rec["id"])["content"]
    assert "hunter2pw" not in content and KEY_BODY not in content
    assert content == "db postgresql://a:[REDACTED:url_password]@h/x and key [REDACTED:private_key]"


SECRET_LINE = "connect postgresql://app:Sup3rSecretPw@db/app with DB_PASSWORD=hunter2hunter"


@pytest.fixture
def log_stream() -> Any:
    stream = io.StringIO()
    logsetup.set_redactor(redact_known)
    logsetup.configure("debug", "json", stream=stream)
    yield stream
    logsetup.reset()


def test_no_log_line_carries_a_credential_whoever_writes_it(log_stream: io.StringIO) -> None:
    log = logsetup.get_logger("memoryd.test")
    log.warning(
        SECRET_LINE, error=ValueError(SECRET_LINE), items=[SECRET_LINE], d={"k": SECRET_LINE}
    )
    try:
        raise RuntimeError(SECRET_LINE)
    except RuntimeError:
        log.exception("request failed", method="add")
    logging.getLogger("psycopg.pool").warning("error connecting: %s", SECRET_LINE)
    lines = [json.loads(x) for x in log_stream.getvalue().splitlines()]
    assert len(lines) == 3
    text = log_stream.getvalue()
    assert "Sup3rSecretPw" not in text and "hunter2hunter" not in text
    assert "[REDACTED:url_password]" in lines[0]["event"]
    assert (
        "RuntimeError" in lines[1]["exception"]
        and "[REDACTED:url_password]" in lines[1]["exception"]
    )


def test_the_log_keeps_paths_hashes_and_ids(log_stream: io.StringIO) -> None:
    """Only the shaped kinds: the high-entropy guess would garble ordinary log fields."""
    path = "/tmp/pytest-of-me/pytest-1234/test_a_long_name_of_a_test0/ws/daily/2026-11-27.md"
    sha = "9c7d94f3b2a1e0d4c5b6a7f8e9d0c1b2a3f4e5d69c7d94f3b2a1e0d4c5b6a7f8"
    logsetup.get_logger("memoryd.test").info(
        "indexed", path=path, sha256=sha, id="Zx9Qw8Rt7Yu6Io5P"
    )
    line = json.loads(log_stream.getvalue())
    assert (line["path"], line["sha256"], line["id"]) == (path, sha, "Zx9Qw8Rt7Yu6Io5P")


def test_the_bench_corpora_hold_no_shaped_credential() -> None:
    """1149 ordinary notes (Go docs, chat logs, tech notes): only the high-entropy guess fires
    (fuzz corpus hashes, long URLs), no shaped kind: the shapes do not misfire on prose."""
    root = Path(__file__).resolve().parent.parent / "bench" / "data"
    texts = [p.read_text(errors="replace") for p in root.glob("**/*.md")]
    for corpus in root.glob("**/corpus.jsonl"):
        for line in corpus.read_text().splitlines():
            doc = json.loads(line)
            texts.append(f"{doc.get('title', '')}\n{doc.get('text', '')}")
    assert len(texts) > 1000
    found = {k for t in texts for k in kinds(t)}
    assert found <= {"high_entropy_token"}


@pytest.mark.backends
def test_the_real_daemon_keeps_credentials_out_of_its_log_and_daily_log(
    daemon_factory: Any,
) -> None:
    """End to end: memoryctl add refuses without echoing, --allow-secrets stores the text but
    the daily log line is redacted, and a log line naming a file (a skipped note whose name is a
    .env line) carries no credential either."""
    from conftest import wait_for

    d = daemon_factory(indexer={"max_file_bytes": 1024, "debounce_ms": 100})
    ws = Path(d.cfg["workspace"])
    text = f"db postgresql://app:hunter2pw@db/app, -----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}"
    refused = d.ctl("add", "-", input=text)
    assert refused.returncode == 1 and "url_password" in refused.stderr
    assert "hunter2pw" not in refused.stderr + refused.stdout
    assert "memoryctl add - --allow-secrets" in refused.stderr  # stdin: out of `ps`
    kept = d.ctl("add", "-", "--allow-secrets", input="placeholder text")
    assert kept.returncode == 0, kept.stderr
    mid = kept.stdout.split()[-1]
    changed = d.ctl("update", mid, "--content", "-", "--allow-secrets", input=text)
    assert changed.returncode == 0, changed.stderr
    assert "hunter2pw" in d.ctl("get", mid).stdout  # kept in the store, as allowed
    daily = "".join(p.read_text() for p in (ws / "daily").glob("*.md"))
    assert "[REDACTED:url_password]" in daily and "[REDACTED:private_key]" in daily
    assert "hunter2pw" not in daily and KEY_BODY not in daily
    (ws / "DB_PASSWORD=hunter2hunter.md").write_text("x" * 2048)
    wait_for(lambda: "skipped file" in d.log(), timeout=20)
    log = d.log()
    assert "hunter2hunter" not in log and "hunter2pw" not in log and KEY_BODY not in log
    assert "DB_PASSWORD=[REDACTED:credential_assignment]" in log


@pytest.mark.sqlite_only("the WAL file is SQLite's")
@pytest.mark.backends
def test_a_deleted_memory_leaves_no_file_after_the_checkpoint_job(make_app: Any) -> None:
    """Found by the walk: the text of a deleted memory (a token stored with allow_secrets)
    stayed in memoryd.db-wal after the delete, the checkpoint job and later writes, while the
    docs said old WAL frames go at the next checkpoint job (RESTART left them in the file)."""
    app = make_app(model=None)
    marker = "ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8Nn7"
    mid = call(app, "add", content=f"staging token {marker}", allow_secrets=True)["id"]
    call(app, "add", content="another memory, so the WAL has frames after the secret's")
    call(app, "delete", id=mid)
    call(app, "jobs.run", name="checkpoint")
    call(app, "add", content="a write after the checkpoint")
    places = [*Path(app.cfg.data_dir).rglob("*"), *Path(app.cfg.workspace).rglob("*")]
    holding = [p.name for p in places if p.is_file() and marker.encode() in p.read_bytes()]
    assert holding == []


@pytest.mark.parametrize(("text", "secret", "kind"), FORMATS, ids=IDS)
def test_a_memorys_credential_is_never_made_an_entity(text: str, secret: str, kind: str) -> None:
    """Found by the walk: `memoryctl entities` (and the MCP entity tools, the web page's graph)
    listed hunter2pw, a ghp_ token and a private key's body of a memory stored with
    --allow-secrets as identifiers."""
    from memoryd.store.entities import memory_mentions

    mentions = memory_mentions(f"Ask Lena Fischer. {text}", ["ops"])
    assert not [m.name for m in mentions if secret in m.name or m.name in secret]
    assert "Lena Fischer" in {m.name for m in mentions}


@pytest.mark.backends
def test_the_entities_listing_holds_no_credential_of_a_memory(make_app: Any) -> None:
    app = make_app(model=None)
    text = f"Zebulon Quarkfield set db postgresql://app:hunter2pw@db/app, {FORMATS[2][0]}"
    call(app, "add", content=text, allow_secrets=True)
    listing = json.dumps(call(app, "entities", top=500))
    assert "Zebulon Quarkfield" in listing
    for secret in ("hunter2pw", FORMATS[2][1]):
        assert secret not in listing


def _plain_scan(text: str) -> list[tuple[str, int, int]]:
    """scan() without its shortcuts (needles, lowered patterns): every pattern over the text."""
    from memoryd.text import secretguard as sg

    found = []
    for kind, pattern in sg.PATTERNS:
        for m in pattern.finditer(text):
            if "value" in pattern.groupindex:
                if not sg._PLACEHOLDER.match(m.group("value")):
                    found.append((kind, m.start("value"), m.end("value")))
            else:
                found.append((kind, m.start(), m.end()))
    found.sort(key=lambda f: (f[1], -f[2]))
    out: list[tuple[str, int, int]] = []
    for f in found:
        if not out or f[1] >= out[-1][2]:
            out.append(f)
    return out


SHORTCUT_CASES = [
    *(t for t, _, _ in FORMATS),
    *NOT_SECRETS,
    "pa\u017fsword = hunter2hunter",  # re.IGNORECASE's long s
    "API_\u212aEY = abcdefgh12",  # the Kelvin sign
    "\u0130 caf\u00e9 DB_PASSWORD=hunter2pw\u2019s",
    "x_password_token=abcdefgh sslpassword=x_token=abcdefgh",
    "Authorization: bearer abcdefghijk; ACCESS-KEY: abcdefgh",
]


@pytest.mark.parametrize(
    "text",
    [
        *SHORTCUT_CASES,
        *(t.upper() for t in SHORTCUT_CASES),
        *(f"\u201c{t}\u201d \u00df" for t in SHORTCUT_CASES),
    ],
)
def test_scans_shortcuts_find_what_every_pattern_finds(text: str) -> None:
    from memoryd.text.secretguard import scan

    assert [(f.kind, f.start, f.end) for f in scan(text, guess=False)] == _plain_scan(text)


def test_the_scan_benchmark_runs_against_a_module(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import secretscan
    from memoryd.text import secretguard

    assert secretscan.main(["--against", secretguard.__file__, "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    notes = out.split(" notes", 1)[0]
    assert f"same spans in {notes}\n" in out and "round 1:" in out
