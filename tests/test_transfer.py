"""Export and import: ids, history and the access log survive a round trip (property-based)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import apps_apart
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.memory import lifecycle, transfer
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=120,
).filter(lambda t: t.strip())

memory = st.fixed_dictionaries(
    {
        "content": text,
        "tags": st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True), max_size=3),
        "importance": st.integers(1, 10),
        "tier": st.sampled_from(lifecycle.TIERS[:-2]),
        "type": st.sampled_from(["fact", "preference", "decision"]),
        "context": st.one_of(st.none(), text),
        "namespace": st.sampled_from(["default", "work", "home"]),
        "triggers": st.lists(st.from_regex(r"[a-z]{2,8} [a-z]{2,8}", fullmatch=True), max_size=2),
    }
)
# per memory: how many uses, whether it gets an update, and whether it is deleted before export
plans = st.lists(
    st.tuples(memory, st.integers(0, 3), st.booleans(), st.booleans()), min_size=1, max_size=6
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plans)
def test_round_trip_keeps_ids_history_and_access_log(
    make_app: Any, new_store: Any, plan: list
) -> None:
    sections: dict[str, Any] = {"model": None, "secrets": {"mode": "off"}}
    with apps_apart(make_app, new_store, ("src", "dst"), **sections) as (src, dst):
        t = [1_800_000_000.0]
        src.memories.clock = lambda: t[0]
        for mem, uses, change, delete in plan:
            t[0] += 10
            added = src.memories.add(**mem)
            if added.duplicate:
                continue
            for _ in range(uses):
                t[0] += 1
                src.memories.used(added.id)
            if change:
                t[0] += 1
                src.memories.update(added.id, {"importance": 11 - mem["importance"]})
            if delete:
                src.memories.delete(added.id)
        exported = src.store.read(lambda con: list(transfer.export(con)))
        lines = "\n".join(json.dumps(x) for x in exported)
        items = [item for _, item in transfer.parse_lines(lines)]
        counts = call(dst, "import", items=items)
        assert counts["imported"] == len(exported) and counts["renumbered"] == []
        again = dst.store.read(lambda con: list(transfer.export(con)))
        assert again == exported
        for item in exported:
            assert dst.memories.get(item["id"], record_access=False)["content"] == item["content"]
        # a second import changes nothing
        counts = call(dst, "import", items=items)
        assert counts["imported"] == 0 and counts["skipped_duplicates"] == len(items)
        # ids stay unique afterwards: a new memory gets an id no exported one had
        new = dst.memories.add("a memory made after the import").id
        assert new > max([i["id"] for i in exported], default=0)


def test_import_renumbers_only_when_the_id_is_taken(make_app: Any, new_store: Any) -> None:
    app = make_app(model=None)
    a = app.memories.add("alpha memory").id
    exported = app.store.read(lambda con: list(transfer.export(con)))
    other = make_app(
        model=None, data_dir=str(Path(app.cfg.data_dir).parent / "other"), store=new_store()
    )
    taken = other.memories.add("something else entirely").id
    assert taken == a
    counts = call(other, "import", items=exported)
    assert counts["renumbered"] == [{"from": a, "to": counts["ids"][0]}]
    assert counts["ids"][0] > taken
