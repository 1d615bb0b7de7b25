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
    loader = _loader()(source)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


class Refused(Exception):
    """Front matter that is closed but not accepted (too large, aliases): the body is kept."""
