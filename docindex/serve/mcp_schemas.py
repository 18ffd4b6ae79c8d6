"""The MCP tools' input schemas and the check of a call's arguments (issue #6, #17).

Enums for file types, modes and front-matter facet values are filled from the
index each time the tools are listed (docs-mcp's taxonomy injection); a call's
arguments are checked against the schema without them before it is queued.
Split from ``mcp`` (the transport) and ``mcp_tools`` (what a call does), #49.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from docindex.errors import BadInputError
from docindex.models.limits import (
    MAX_CHUNK_ID_CHARS,
    MAX_GLOB_CHARS,
    MAX_OFFSET,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
)
from docindex.search.engine import MODES

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

    from docindex.api.records import Vocabulary
    from docindex.models.serialize import JSONObject

# A JSON schema as the tools list it (built here, only handed to the SDK).
Schema = dict[str, object]

MAX_BATCH = 10
MAX_ENUM = 100  # a facet with more values gets no enum (schemas stay small)


# -- schemas --------------------------------------------------------------------


def _int(description: str, default: int, lo: int, hi: int) -> Schema:
    return {"type": "integer", "minimum": lo, "maximum": hi, "default": default,
            "description": description}  # fmt: skip


def _bool(description: str, default: bool) -> Schema:
    return {"type": "boolean", "default": default, "description": description}


def _str(description: str, max_length: int, min_length: int = 0) -> Schema:
    schema: Schema = {"type": "string", "maxLength": max_length,
                              "description": description}  # fmt: skip
    if min_length:
        schema["minLength"] = min_length
    return schema


def _object(props: dict[str, object], required: tuple[str, ...] = ()) -> Schema:
    schema: Schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _type_schema(types: list[str]) -> Schema:
    one: Schema = {"type": "string", "maxLength": 100}
    if types:
        one["enum"] = types
    return {
        "anyOf": [one, {"type": "array", "items": one, "maxItems": 100}],
        "description": "Only documents of this type, or of any of these types.",
    }


def _where_schema(facets: dict[str, list[str]]) -> Schema:
    value = {"type": "string", "maxLength": MAX_QUERY_CHARS}
    props = {
        key: {**value, **({"enum": values} if len(values) <= MAX_ENUM else {})}
        for key, values in sorted(facets.items())
    }
    return {
        "type": "object",
        "properties": props,
        "additionalProperties": value,
        "propertyNames": {"maxLength": MAX_QUERY_CHARS},
        "maxProperties": 100,
        "description": "Front-matter filters, key -> value (all must hold).",
    }


def _query_schemas(vocab: Vocabulary) -> tuple[dict[str, Schema], dict[str, object]]:
    """The filters' schemas, and ``doc_query``'s arguments (filters included)."""
    types, facets = list(vocab.get("types") or []), dict(vocab.get("facets") or {})
    filters = {
        "type": _type_schema(types),
        "path": _str(
            "Only documents under this folder, this file, or matching "
            "this glob (root-relative).",
            MAX_GLOB_CHARS,
        ),
        "where": _where_schema(facets),
    }  # fmt: skip
    query_props = {
        "query": _str('What to look for, in plain words (any language); '
                      '"exact phrase", +required, -excluded, -"excluded phrase".',
                      MAX_QUERY_CHARS, 1),
        "top_k": _int("Number of hits.", 10, 1, 100),
        "mode": {"type": "string", "enum": list(MODES), "default": "auto",
                 "description": "Rankings to use: auto (hybrid), lexical, semantic."},
        "highlight": _bool("Mark matches in snippets with **...**.", True),
        "snippet_chars": _int("Snippet length in characters.", 200, 20, 5000),
        **filters,
        "cursor": _str("next_cursor of a previous result, for the next page.", 1024),
    }  # fmt: skip
    return filters, query_props


def tool_schemas(vocab: Vocabulary) -> dict[str, tuple[str, Schema]]:
    """Tool name -> (description, input JSON schema) for the index's vocabulary.

    Argument names are snake_case. String lengths and integer ranges are the
    limits of :mod:`docindex.limits`; calls are validated against these schemas
    (without the vocabulary's enums) before they are queued.

    Args:
        vocab: ``Index.vocabulary()``: ``types`` and ``facets`` present.
    """
    filters, query_props = _query_schemas(vocab)
    path_doc = "A file path relative to a root, or absolute inside one."
    path = _str(path_doc, MAX_PATH_CHARS, 1)
    batch_item = _object({k: v for k, v in query_props.items() if k != "cursor"},
                         ("query",))  # fmt: skip
    return {
        "doc_scan": ("Index new and changed files under the roots (or one path).",
                     _object({"path": _str(path_doc + " Default: all roots.",
                                           MAX_PATH_CHARS),
                              "force": _bool("Re-index unchanged files.", False)})),
        "doc_query": ("Search the index; hits carry path, line, chunk_id, score (vs the "
                      "best hit) and coverage (0-1: share of the query the hit holds). "
                      "An empty or weak result carries a hint; did_you_mean suggests "
                      "spellings.", _object(query_props, ("query",))),
        "doc_reindex": ("Re-read every file; full rebuilds the index file.",
                        _object({"full": _bool("Rebuild from scratch.", False)})),
        "doc_stats": ("What the index holds: roots, counts, types, facets.", _object({})),
        "get_doc": ("A chunk by chunk_id (or FILE[:LINE]) with neighbouring chunks.",
                    _object({"chunk_id": _str("A chunk id from a hit, or FILE[:LINE].",
                                              MAX_CHUNK_ID_CHARS, 1),
                             "context": _int("Neighbouring chunks on each side.",
                                             0, 0, 20)}, ("chunk_id",))),
        "get_outline": ("A document's title and headings with levels and lines.",
                        _object({"path": path,
                                 "max_depth": _int("Heading levels, from the top level present.", 6, 1, 6)},
                                ("path",))),
        "get_section": ("The text under a heading (case-insensitive) with its lines.",
                        _object({"path": path,
                                 "section": _str("Heading text.", MAX_QUERY_CHARS, 1),
                                 "include_subsections": _bool("Include sub-headings.",
                                                              True)},
                                ("path", "section"))),
        "find_related": ("Documents nearest by vector to a chunk or a whole file: "
                         "one hit each, its other near chunks in folded.",
                         _object({"path": path,
                                  "chunk_id": _str("Optional chunk of that file.",
                                                   MAX_CHUNK_ID_CHARS),
                                  "limit": _int("Number of documents.", 10, 1, 100),
                                  "same_file": _bool("Include the same file.", False)},
                                 ("path",))),
        "list_documents": ("Indexed documents with title, type, size and segments.",
                           _object({"path": filters["path"], "type": filters["type"],
                                    "limit": _int("Page size.", 50, 1, 500),
                                    "offset": _int("Documents to skip.", 0, 0,
                                                   MAX_OFFSET)})),
        "search_batch": (f"Run up to {MAX_BATCH} queries at once.",
                         _object({"queries": {"type": "array", "items": batch_item,
                                              "minItems": 1, "maxItems": MAX_BATCH},
                                  "limit": _int("Default top_k per query.", 5, 1, 100)},
                                 ("queries",))),
    }  # fmt: skip


# -- argument validation --------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _validators() -> dict[str, Draft202012Validator]:
    """One compiled validator per tool, for the schemas without index enums."""
    from jsonschema import Draft202012Validator

    return {
        name: Draft202012Validator(schema)
        for name, (_, schema) in tool_schemas({}).items()
    }


def validate_arguments(name: str, args: object) -> JSONObject:
    """``args`` checked against tool ``name``'s schema; nulls mean "not given".

    Runs before a call is queued, so a queued call holds at most the limits'
    worth of text and a bad one costs nothing but this check.

    Raises:
        BadInputError: unknown tool, or the first argument at fault (named).
    """
    validator = _validators().get(name)
    if validator is None:
        raise BadInputError(f"unknown tool {clip(name)!r}")
    if not isinstance(args, dict):
        raise BadInputError("arguments must be an object")
    given = {k: v for k, v in args.items() if v is not None}
    for error in validator.iter_errors(given):
        raise BadInputError(_message(error, validator.schema))
    return given


def clip(value: object, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _message(error: ValidationError, schema: Mapping[str, object]) -> str:
    """A one-line message that names the argument, never echoing a huge value."""
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    kind, limit, value = error.validator, error.validator_value, error.instance
    if kind == "additionalProperties":
        known = error.schema.get("properties", {})
        extra = sorted(k for k in value if k not in known)
        inside = "" if where == "arguments" else f" in {where}"
        return (f"unknown argument {clip(extra[0])!r}{inside}; names are "
                "snake_case (top_k, snippet_chars)")  # fmt: skip
    if kind == "required":
        missing = [k for k in limit if k not in value]
        prefix = "" if where == "arguments" else f"{where}: "
        return f"{prefix}{missing[0]} is required"
    if kind == "type":
        return f"{where} must be of type {limit}, not {type(value).__name__}"
    if kind in ("minimum", "maximum"):
        lo, hi = error.schema.get("minimum"), error.schema.get("maximum")
        return f"{where} must be in {lo}..{hi:,}"
    if kind == "maxLength":
        return f"{where} is {len(value):,} characters long; the limit is {limit:,}"
    if kind == "minLength":
        return f"{where} must not be empty"
    if kind == "enum":
        return f"{where} must be one of {', '.join(map(str, limit))}"
    if kind in ("maxItems", "maxProperties"):
        return f"{where}: at most {limit} items"
    if kind == "minItems":
        return f"{where}: at least {limit} item"
    if kind == "anyOf":
        return f"{where} must be a string or a list of strings (each at most 100)"
    return f"{where}: invalid value ({kind})"
