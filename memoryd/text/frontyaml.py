"""Front matter's YAML, read as Obsidian reads it: the safe loader, no aliases, lenient about
values (memoryd/text/markdown.py parses front matter with it)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


@functools.cache
def _loader() -> Any:
    """yaml.SafeLoader without aliases (a few hundred bytes can expand into gigabytes, the
    "billion laughs") and lenient about values, as Obsidian is: a value its tag cannot make
    (`date: 2024-02-30`, `!!int abc`) is its text, an unknown tag (`!custom x`) is ignored."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise Refused("YAML aliases (*name) are not allowed in front matter")
            return super().compose_node(parent, index)

    def lenient(make: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def construct(loader: Any, node: Any) -> Any:
            try:
                return make(loader, node)
            except (ValueError, OverflowError, yaml.constructor.ConstructorError):
                if isinstance(node, yaml.ScalarNode):
                    return loader.construct_scalar(node)
                raise

        return construct

    def untagged(loader: Any, node: Any) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_mapping(node, deep=True)

    for kind in ("timestamp", "int", "float", "binary"):
        tag = f"tag:yaml.org,2002:{kind}"
        NoAliasLoader.add_constructor(tag, lenient(yaml.SafeLoader.yaml_constructors[tag]))
    NoAliasLoader.add_constructor(None, untagged)
    return NoAliasLoader


def load(source: str) -> Any:
    """yaml.safe_load through _loader()."""
    return load_node(source)[0]


def load_node(source: str) -> tuple[Any, Any]:
    """(the data, as `load` gives it; its YAML node tree, None for an empty text): the nodes
    keep each value as written (`1.10`, `2026-12-01 10:00`), which `values_text` reads."""
    loader = _loader()(source)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


# the values a note's words stand for: not a flag or an empty value (`draft: true`, `due:`)
_NOT_WORDS = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:null")


def values_text(node: Any, skip: frozenset[str] = frozenset(), limit: int = 4096) -> str:
    """The values of a front-matter mapping as written, one a line, for the keyword index
    (indexer: `status: draft`, `project: kestrel`, `author: Ana Lima` make a note found by
    `draft`, `kestrel`, `Ana Lima`): every scalar, also inside lists and nested mappings,
    except those of the top-level keys in `skip` (searchable already: tags, aliases, the
    title), yes/no flags and empty values. Not the keys: `status` or `due` would match every
    note that has the field. Cut at `limit` characters."""
    import yaml

    out: list[str] = []
    size = 0

    def walk(n: Any) -> None:
        nonlocal size
        if size >= limit:
            return
        if isinstance(n, yaml.ScalarNode):
            if n.tag not in _NOT_WORDS and n.value.strip():
                text = " ".join(str(n.value).split())
                out.append(text)
                size += len(text) + 1
        elif isinstance(n, yaml.SequenceNode):
            for item in n.value:
                walk(item)
        elif isinstance(n, yaml.MappingNode):
            for _key, value in n.value:
                walk(value)

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if not (isinstance(name, str) and name.strip().lower() in skip):
                walk(value)
    return "\n".join(out)[:limit]


class Refused(Exception):
    """Front matter that is closed but not accepted (too large, aliases): the body is kept."""
