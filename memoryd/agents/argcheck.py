"""The MCP tools' own check of their arguments against each tool's JSON schema, said in the
words the daemon uses for the same mistake on the socket (`limit: expected an integer from 1 to
100, got 0`): one message per argument, JSON's null and true (never Python's None), and for an
integer the daemon's own message (core.errors.int_expected)."""

from __future__ import annotations

from typing import Any

from memoryd.core.errors import describe, int_expected


def check_arguments(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """What is wrong with the arguments, in the words the daemon uses for the same mistake on
    the socket (`limit: expected an integer from 1 to 100, got 0`), or None."""
    import jsonschema

    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(args),
        key=lambda e: ([str(p) for p in e.path], e.validator != "enum"),
    )
    if not errors:
        return None
    first: dict[tuple[str, ...], Any] = {}  # one message an argument: an enum's lists its values
    for e in errors:
        whole = e.validator in ("required", "additionalProperties")  # about the object itself
        first.setdefault((*(str(p) for p in e.path), e.message if whole else ""), e)
    return "; ".join(dict.fromkeys(schema_message(e) for e in list(first.values())[:5]))


def integral(schema: dict[str, Any], value: Any) -> Any:
    """`value` (arguments that passed the schema) with each integer given as 2.0 or 1e1 made
    2 and 10: JSON Schema counts a number with no fraction as an integer, so the check above
    lets it through, and the daemon takes only JSON integers (`got 2.0`), and a page of a note
    was cut by it."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if isinstance(value, float) and "integer" in kinds and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        return {k: integral(props[k], v) if k in props else v for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [integral(schema["items"], v) for v in value]
    return value


_TYPE_WORDS = {
    "string": "a string",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


def schema_message(error: Any) -> str:
    """One schema error as the daemon would say it: the argument's name, what it takes, and
    the value given (core.errors.describe: JSON's null and true, never Python's None); a
    missing argument is "got nothing (it is required)"."""
    names = [str(p) for p in error.path if not isinstance(p, int)]
    if error.validator == "required":
        missing = error.message.split("'")[1]
        schema = (error.schema.get("properties") or {}).get(missing) or {}
        said = _said(".".join([*names, missing]), None, schema, "type", error)
        return said.replace(", got null", ", got nothing (it is required)")
    return _said(".".join(names), error.instance, error.schema, error.validator, error)


def _said(where: str, value: Any, schema: dict[str, Any], rule: str, error: Any) -> str:
    if rule == "additionalProperties":
        allowed = ", ".join(sorted(error.schema.get("properties") or {}))
        extra = sorted(set(error.instance) - set(error.schema.get("properties") or {}))
        shown = ", ".join(describe(k) for k in extra)
        return f"{where + ': ' if where else ''}unknown param {shown} (accepted: {allowed})"
    if isinstance(error.path and error.path[-1], int):  # an item of a list
        return f"{where}: expected a list of strings, got {describe(error.instance)} in it"
    kind = schema.get("type")
    if kind == "integer" and rule in ("type", "minimum", "maximum"):
        return int_expected(where, value, schema.get("minimum", 0), schema.get("maximum"))
    if kind == "number" and rule in ("type", "minimum", "maximum"):
        low, high = schema.get("minimum"), schema.get("maximum")
        bounds = f" from {low} to {high}" if low is not None and high is not None else ""
        return f"{where}: expected a number{bounds}, got {describe(value)}"
    if rule == "enum":
        return f"{where}: expected one of {', '.join(schema['enum'])}, got {describe(value)}"
    if rule == "minLength":
        return f"{where}: must not be empty"
    if rule == "pattern" and "sha256" in str(schema.get("description")):
        return (
            f'{where}: expected the 64 hex digits read_note returned (or "" for a note that '
            f"must not exist yet), got {describe(value)}"
        )
    if kind == "array":
        return f"{where}: expected a list of strings, got {describe(value)}"
    if isinstance(kind, list):
        wanted = " or ".join(_TYPE_WORDS.get(k, f"a {k}") for k in kind)
        return f"{where}: expected {wanted}, got {describe(value)}"
    if isinstance(kind, str) and rule == "type":
        return f"{where}: expected {_TYPE_WORDS.get(kind, 'a ' + kind)}, got {describe(value)}"
    return f"{where}: {error.message}" if where else error.message
