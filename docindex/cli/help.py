"""Examples at the end of every command's ``--help`` (issue #20)."""

from __future__ import annotations

import click

EXAMPLES: dict[str, list[str]] = {
    "scan": [
        "docindex scan ~/notes",
        "docindex scan --root ~/work/specs --exclude 'drafts/'",
        "docindex scan --json --progress | jq -c 'select(.event==\"result\")'",
    ],
    "query": [
        'docindex query "rotate the api keys"',
        "docindex query 'install' --type md --path 'guide/*' --context 2",
        "docindex query 'timeout' --vimgrep | vim -q /dev/stdin",
    ],
    "reindex": [
        "docindex reindex guide/",
        "docindex reindex --full --provider minilm",
    ],
    "stats": ["docindex stats", "docindex stats --json | jq .facets"],
    "vacuum": ["docindex vacuum", "docindex vacuum --json | jq .reclaimed_bytes"],
    "skipped": [
        "docindex skipped",
        "docindex skipped --reason timeout",
        "docindex skipped --json | jq -r '.files[].path'",
    ],
    "watch": ["docindex watch", "docindex watch --root ~/notes --json"],
    "outline": [
        "docindex outline guide/install.md",
        "docindex outline README.md --depth 2",
    ],
    "show": [
        "docindex show guide/install.md#requirements",
        "docindex show guide.md:42 -C 1",
    ],
    "section": [
        "docindex section guide/install.md 'Requirements'",
        "docindex section README.md usage --no-subsections",
    ],
    "list": ["docindex list --type pdf", "docindex list --path 'guide/*' | cut -f1"],
    "related": [
        "docindex related guide/install.md",
        "docindex related 'guide.md#setup' -n 5",
    ],
    "mcp": [
        "docindex mcp --root ~/notes",
        "docindex mcp --db ~/notes/.docindex/index.db",
    ],
    "eval": [
        "docindex eval /path/to/scifact",
        "docindex eval /path/to/scifact --mode lexical --queries 100 --json",
        "docindex eval /path/to/scifact --engine postgresql://me@localhost/scratch",
    ],
    "export": [
        "docindex export > notes.ndjson",
        "docindex export --db ~/notes/.docindex/index.db | gzip > notes.ndjson.gz",
    ],
    "import": [
        "docindex import notes.ndjson --db postgresql://me@db.example/team",
        "docindex import - --db ~/copy/index.db < notes.ndjson",
    ],
    "roots": [
        "docindex roots",
        "docindex roots move /old/place/notes ~/notes",
        "docindex roots remove ~/archive",
    ],
    "roots list": ["docindex roots list", "docindex roots list --json"],
    "roots add": [
        "docindex roots add ~/notes",
        "docindex roots add . && docindex scan",
    ],
    "roots remove": [
        "docindex roots remove ~/archive",
        "docindex roots remove . --json",
    ],
    "roots accept": [
        "docindex roots accept /mnt/share/handbook --db postgresql://me@db/team",
        "docindex roots --json | jq -r '.roots[] | select(.accepted | not) | .path'",
    ],
    "roots grant": [
        "docindex roots grant ~/share/hr hr_reader --db postgresql://owner@db/team",
        "docindex roots grant hr hr_reader payroll_reader",
    ],
    "roots revoke": [
        "docindex roots revoke ~/share/hr payroll_reader",
        "docindex roots --json | jq '.roots[] | {path, grants}'",
    ],
    "roots move": [
        "docindex roots move /old/place/notes ~/notes",
        "cp -r notes notes-copy && cd notes-copy && docindex roots move ../notes .",
    ],
    "config": ["docindex config", "docindex config --json | jq .settings.roots"],
}


def add_examples(group: click.Group, option: click.Option, prefix: str = "") -> None:
    """Give every command ``option`` (--color) and its Examples epilog.

    A command without examples gets none (tests/test_cli_edges.py says so)
    rather than failing the whole CLI at import.
    """
    for name, command in group.commands.items():
        command.params.append(option)
        lines = EXAMPLES.get(prefix + name)
        if lines:
            body = "\n".join(f"  {x}" for x in lines)
            command.epilog = f"Examples:\n\n\b\n{body}"
        if isinstance(command, click.Group):
            add_examples(command, option, f"{name} ")
