"""What a scan reads is decided on the reader's machine (issue #44), on SQLite.

A SQLite index copied from someone else can carry a planted root, widened
settings or a ``config.toml`` beside it; an import can declare any root. Each
test builds the hostile index with the real tools (the CLI, sqlite3) and
checks what a plain scan then reads.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest
from conftest import run, run_json, write_tree


def _settings(db: Path) -> dict[str, object]:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
    value: dict[str, object] = json.loads(row[0])
    return value


def _plant(db: Path, **changes: object) -> None:
    """Rewrite the index's remembered settings, as whoever made the file could."""
    settings = {**_settings(db), **changes}
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps(settings),)
        )


def _indexed(db: Path) -> set[str]:
    docs = run_json("list", "--db", str(db), "--limit", "1000")["documents"]
    return {d["rel_path"] for d in docs}


def _other_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Become another person: a config folder (what they accepted) of their own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / f"{name}-config"))


def test_a_planted_root_is_left_out_until_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = write_tree(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    private = write_tree(tmp_path / "private", {"secret.md": "# S\n\nhunter2\n"})
    db = tmp_path / "shared" / "index.db"
    run("scan", str(docs), "--db", str(db))
    _plant(db, roots=[str(docs), str(private)])  # the copy someone sends you
    _other_user(tmp_path, monkeypatch, "me")
    out = run("scan", "--db", str(db))
    # neither root was named here: this user reads neither, and says so
    assert "left out 2 roots" in out.stderr and str(private) in out.stderr
    assert f"docindex roots accept {docs} {private}" in out.stderr
    assert _indexed(db) == {"a.md"}
    listed = {
        r["path"]: r["accepted"] for r in run_json("roots", "--db", str(db))["roots"]
    }
    assert listed == {str(docs): False, str(private): False}
    assert not run_json("query", "hunter2", "--db", str(db))["hits"]
    run("roots", "accept", str(private), "--db", str(db))
    out = run("scan", "--db", str(db))
    assert "left out 1 root" in out.stderr and f"accept {docs}`" in out.stderr
    assert "secret.md" in _indexed(db)
    # the index still remembers both roots: leaving one out forgot nothing
    assert set(_settings(db)["roots"]) == {str(docs), str(private)}  # type: ignore[arg-type]


def test_what_you_name_is_read_and_remembered_for_you(tmp_path: Path) -> None:
    one = write_tree(tmp_path / "one", {"a.md": "# A\n\nalpha\n"})
    two = write_tree(tmp_path / "two", {"b.md": "# B\n\nbravo\n"})
    db = tmp_path / "i.db"
    run("scan", str(one), "--db", str(db))
    run("scan", "--root", str(two), "--db", str(db))
    (one / "c.md").write_text("# C\n\ncharlie\n")
    out = run("scan", "--db", str(db), "--json")
    assert "left out" not in out.stderr
    assert _indexed(db) == {"a.md", "b.md", "c.md"}
    state = Path(os.environ["XDG_CONFIG_HOME"], "docindex", "trust.json")
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    kept = json.loads(state.read_text())["indexes"][str(db.resolve())]
    assert set(kept["roots"]) == {str(one), str(two)}


def test_an_index_in_its_folder_reads_that_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DIR/.docindex/index.db`` reads DIR for anyone: the folder holds it."""
    monkeypatch.delenv("DOCINDEX_DB")
    root = write_tree(tmp_path / "proj", {"a.md": "# A\n\nalpha\n"})
    run("scan", str(root))
    _other_user(tmp_path, monkeypatch, "colleague")
    (root / "b.md").write_text("# B\n\nbravo\n")
    monkeypatch.chdir(root)
    out = run("scan", "--json")
    assert "left out" not in out.stderr
    assert json.loads(out.stdout)["indexed"] == 1


def test_settings_in_the_index_narrow_but_never_widen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "docs", {
        "a.md": "# A\n\nalpha\n", ".env": "TOKEN=hunter2\n",
        ".hidden/notes.md": "# H\n\nhidden words\n", "big.md": "# Big\n\n" + "x " * 5000,
    })  # fmt: skip
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db))
    assert _indexed(db) == {"a.md", "big.md"}
    _plant(db, max_file_bytes=1000)  # narrower: applies, and big.md goes
    run("scan", str(root), "--db", str(db), "-q")
    assert _indexed(db) == {"a.md"}
    _plant(db, hidden=True, text_extensions=[".env"], use_gitignore=False)
    said = "\n".join(run_json("scan", str(root), "--db", str(db))["warnings"])
    assert "would read more than this machine's" in said
    assert "hidden = true" in said and "text_extensions .env" in said
    assert _indexed(db) == {"a.md"}  # the hidden files stay out
    assert not run_json("query", "hunter2", "--db", str(db))["hits"]
    shown = run_json("config", "--db", str(db))["settings"]
    assert shown["hidden"]["value"] is False
    assert shown["max_file_bytes"] == {"value": 1000, "source": "index"}
    # your own flag widens, and is remembered for you
    run("scan", str(root), "--db", str(db), "--hidden", "-q")
    assert ".hidden/notes.md" in _indexed(db)
    (root / "new.md").write_text("# New\n\nfresh\n")
    run("scan", "--db", str(db), "-q")
    assert {".hidden/notes.md", "new.md"} <= _indexed(db)


def test_a_config_file_beside_the_index_may_not_widen(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", {"a.md": "# A\n\nalpha\n", ".env": "K=v1\n"})
    db = tmp_path / "idx" / "index.db"
    run("scan", str(root), "--db", str(db))
    (db.parent / "config.toml").write_text(
        'hidden = true\ntext_extensions = [".env"]\nexclude = ["b.md"]\n'
    )
    (root / "b.md").write_text("# B\n\nbravo\n")
    out = run("scan", "--db", str(db))
    assert "would read more than this machine's" in out.stderr
    assert _indexed(db) == {"a.md"}  # .env stays out, b.md is excluded (narrower)


def test_another_users_wider_settings_keep_what_they_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not reading hidden files here does not delete the ones another indexed."""
    root = write_tree(tmp_path / "docs", {"a.md": "# A\n\nalpha\n",
                                          ".notes/h.md": "# H\n\nhidden\n"})  # fmt: skip
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db), "--hidden")
    _other_user(tmp_path, monkeypatch, "colleague")
    run("roots", "accept", str(root), "--db", str(db))
    (root / "a.md").write_text("# A\n\nalpha again\n")
    out = run_json("scan", "--db", str(db))
    assert out["updated"] == 1 and out["removed"] == 0
    assert _indexed(db) == {"a.md", ".notes/h.md"}
    (root / ".notes" / "h.md").unlink()  # gone for real: removed
    assert run_json("scan", "--db", str(db))["removed"] == 1


def test_an_empty_root_folder_keeps_its_documents(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "share", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n"})
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db))
    for f in root.iterdir():
        f.unlink()  # a mount point with nothing mounted on it
    out = run_json("scan", "--db", str(db))
    said = "\n".join(out["warnings"])
    assert out["removed"] == 0 and "is empty on this host" in said
    assert f"docindex roots remove {root}" in said
    assert _indexed(db) == {"a.md", "b.md"}


def test_a_scan_of_a_path_in_a_root_not_accepted_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "docs", {"sub/a.md": "# A\n\nalpha\n"})
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db))
    _other_user(tmp_path, monkeypatch, "other")
    out = run("scan", str(root / "sub"), "--db", str(db), ok=False)
    assert out.exit_code == 2
    assert f"docindex roots accept {root}" in out.stderr


# -- imports --------------------------------------------------------------------


@pytest.fixture
def export(tmp_path: Path) -> list[dict[str, object]]:
    """The records ``docindex export`` writes for a small real index."""
    root = write_tree(tmp_path / "docs", {
        "a.md": "# Alpha\n\nfirst words\n\n## Two\n\nsecond words\n",
        "b.md": "# Bravo\n\nthird words\n",
    })  # fmt: skip
    db = tmp_path / "src.db"
    run("scan", str(root), "--db", str(db))
    lines = run("export", "--db", str(db)).stdout.splitlines()
    return [json.loads(line) for line in lines]


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _doc(records: list[dict[str, object]]) -> dict[str, object]:
    return next(r for r in records if r["type"] == "document")


def _changed(records: list[dict[str, object]], **changes: object) -> list[dict]:
    doc = {**_doc(records), **changes}
    return [*(r for r in records if r["type"] != "document"), doc]


def _without(records: list[dict[str, object]], key: str) -> list[dict]:
    doc = {k: v for k, v in _doc(records).items() if k != key}
    return [*(r for r in records if r["type"] != "document"), doc]


def _chunk_changed(records: list[dict[str, object]], **changes: object) -> list[dict]:
    doc = json.loads(json.dumps(_doc(records)))
    doc["chunks"][0].update(changes)
    return [*(r for r in records if r["type"] != "document"), doc]


HOSTILE = {
    "traversal": (lambda r: _changed(r, rel_path="../../../etc/passwd"), "no '..'"),
    "absolute": (lambda r: _changed(r, rel_path="/etc/passwd"), "relative path"),
    "undeclared root": (lambda r: _changed(r, root="/etc"), "not declared"),
    "missing key": (lambda r: _without(r, "hash"), "missing key 'hash'"),
    "unknown key": (lambda r: _changed(r, extra=1), "unknown key 'extra'"),
    "wrong type": (lambda r: _changed(r, size="big"), "size must be an integer"),
    "bad base64": (lambda r: _chunk_changed(r, vector="!!!"), "not valid base64"),
    "short vector": (lambda r: _chunk_changed(r, vector="AAAA"), "a vector of 3"),
    "offsets": (lambda r: _chunk_changed(r, char_end=10**7), "outside the text"),
    "not json": (lambda r: [*r, "{nope"], "not JSON"),  # type: ignore[list-item]
    "unknown type": (lambda r: [*r, {"type": "sql", "q": "x"}], "unknown record"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_import_is_refused_whole(
    case: str, tmp_path: Path, export: list[dict[str, object]]
) -> None:
    make, expected = HOSTILE[case]
    records = make(export)
    path = tmp_path / "in.ndjson"
    if case == "not json":
        path.write_text("".join(json.dumps(r) + "\n" for r in records[:-1]) + "{nope\n")
    else:
        _write(path, records)
    db = tmp_path / "new.db"
    result = run("import", str(path), "--db", str(db), ok=False)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr and "line " in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert not db.exists()  # all or nothing: not even an empty index is left


def test_an_import_counts_what_it_added_and_keeps_its_limits(
    tmp_path: Path, export: list[dict[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = next(r["path"] for r in export if r["type"] == "root")
    extra = {"type": "root", "path": "/etc"}
    path = _write(tmp_path / "in.ndjson", [*export[:5], extra, *export[5:]])
    counts = run_json("import", str(path), "--db", str(tmp_path / "a.db"))
    counts.pop("schema_version")
    assert counts == {"documents": 2, "chunks": 3, "vectors": 3, "roots": 2}
    # an imported root is not read here until accepted: no scan of /etc
    out = run("scan", "--db", str(tmp_path / "a.db"))
    assert "indexed 0" in out.stderr and "left out" in out.stderr
    assert str(root) in out.stderr
    monkeypatch.setenv("DOCINDEX_MAX_DOCS", "1")
    over = run("import", str(path), "--db", str(tmp_path / "b.db"), ok=False)
    assert over.exit_code == 2 and "max_docs (1)" in over.stderr


def test_a_line_past_the_cap_is_refused_before_it_is_read_whole(
    tmp_path: Path, export: list[dict[str, object]]
) -> None:
    path = tmp_path / "big.ndjson"
    with path.open("w") as fh:
        fh.write(json.dumps(export[0]) + "\n")
        fh.write('{"type": "document", "text": "' + "x" * (65 << 20) + '"}\n')
    result = run("import", str(path), "--db", str(tmp_path / "n.db"), ok=False)
    assert result.exit_code == 2
    assert "line 2: longer than 67,108,864 characters" in result.stderr
