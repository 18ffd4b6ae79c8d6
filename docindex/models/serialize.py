"""JSON for scripts and agents: records as their documented JSON objects.

Shared by the CLI's ``--json`` output and the MCP server, so neither imports
the other's presentation code (issue #18). Keys are the dataclass field names
(``from`` for ``Hit.from_``; a hit's absent locations are dropped).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypeAlias

from docindex.models import Hit

# A JSON value and a JSON object, as json.loads returns them and to_json takes them.
JSONValue: TypeAlias = (
    None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]
)
JSONObject: TypeAlias = dict[str, JSONValue]


def hit_dict(hit: Hit) -> JSONObject:
    """A hit as its documented JSON object (``from`` for ``from_``; absent locations dropped)."""
    data = dataclasses.asdict(hit)
    data["from"] = data.pop("from_")
    for key in ("page", "slide", "sheet", "cell", "explain"):
        if data[key] is None:
            del data[key]
    return data


def to_json(value: object) -> str:
    """Serialise dataclasses/dicts as one compact JSON document (UTF-8 kept)."""
    if isinstance(value, dict | list) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        value = _asdict(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def to_dict(value: object) -> Any:  # a JSON value; Any so callers can index it
    """A result as the plain JSON-ready value ``to_json`` would serialise."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _asdict(value)
    return _asdict(value) if isinstance(value, dict | list) else value


def _asdict(value: object) -> Any:
    if isinstance(value, Hit):
        return hit_dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _asdict(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, list):
        return [_asdict(v) for v in value]
    if isinstance(value, dict):
        return {k: _asdict(v) for k, v in value.items()}
    return value
