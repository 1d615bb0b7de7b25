"""Every MEMORYD_* variable means the same to every door: set empty (`MEMORYD_SOCKET=`, a unit's
`Environment=` line with nothing after it) it is unset, to the daemon's configuration as to
memoryctl and `memoryd mcp` (`${VAR:-default}`). MEMORYD_SOCKET="" was unset to memoryctl and a
configuration error that stopped the daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.core.config import OTHER_ENV, env_names, load_config, unread_env
from memoryd.ctl.client import resolve_socket, socket_path

VARIABLES = sorted({*env_names(), *OTHER_ENV})


@pytest.fixture
def base(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "run").mkdir(mode=0o700)
    return {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }


def test_the_set_is_every_variable_a_door_reads() -> None:
    assert {"MEMORYD_SOCKET", "MEMORYD_WORKSPACE", "MEMORYD_SEARCH_RRF_K"} <= set(VARIABLES)
    assert {"MEMORYD_CONFIG", "MEMORYD_NAMESPACE", "MEMORYD_MCP_PREFIX"} <= set(VARIABLES)


@pytest.mark.parametrize("var", VARIABLES)
def test_an_empty_variable_is_unset_to_the_daemon(base: dict[str, str], var: str) -> None:
    assert load_config(None, base | {var: ""}) == load_config(None, base)
    assert unread_env(base | {var: ""}) == []


def test_an_empty_misspelt_variable_is_unset_too(base: dict[str, str]) -> None:
    """(set, the misspelt key stops startup and the unknown section is a warning)"""
    env = base | {"MEMORYD_INDEXER_INCLUDEZ": "", "MEMORYD_LOG_LEVEL": ""}
    assert load_config(None, env) == load_config(None, base)
    assert unread_env(env) == []


def test_an_empty_socket_is_the_same_socket_to_both_doors(base: dict[str, str]) -> None:
    env = base | {"MEMORYD_SOCKET": ""}
    daemon = str(load_config(None, env).socket)
    assert socket_path(None, env) == socket_path(None, base) == daemon
    assert resolve_socket(None, env) == daemon
