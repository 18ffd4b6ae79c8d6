"""The command line as people live with it (issue #20): roots that move, honest
errors and exit codes, output that pipes, JSON with a schema version."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import run, run_json, write_tree

from docindex.api.workspace import resolve_db
from docindex.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = {
    "guide/install.md": "# Install\n\nRun the installer with pip.\n\n## Keys\n\n"
    "Rotate the api keys every month.\n",
    "notes/ops.md": "# Operations\n\nRestart the daemon after rotating keys.\n",
    "readme.txt": "plain text about zebras\n",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scanned folder with its index in the default place, and no DOCINDEX_DB."""
    monkeypatch.delenv("DOCINDEX_DB")
    folder = write_tree(tmp_path / "notes", DOCS)
    monkeypatch.chdir(folder)
    run("scan", ".", "-q")
    return folder


def _fix(stderr: str) -> list[str]:
    """The command an error message suggests (between backquotes)."""
    found = re.findall(r"`(docindex [^`]+)`", stderr)
    assert found, stderr
    return shlex.split(found[0])[1:]


# -- 1. roots -------------------------------------------------------------------


def test_moved_folder_scan_says_so_and_roots_move_keeps_everything(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = run_json("outline", "guide/install.md")["outline"][1]["chunk_id"]
    before = run_json("show", keys)
    vectors = run_json("stats")["embedded"]
    moved = tmp_path / "elsewhere"
    home.rename(moved)
    monkeypatch.chdir(moved)
    result = run("scan", ok=False)
    assert result.exit_code == 1
    assert "no longer exists" in result.stderr and "roots move" in result.stderr
    fix = _fix(result.stderr)
    assert fix[:2] == ["roots", "move"]
    run(*fix)
    assert [r["path"] for r in run_json("roots")["roots"]] == [str(moved.resolve())]
    out = run_json("scan")
    assert (out["indexed"], out["updated"], out["unchanged"]) == (0, 0, 3)
    after = run_json("show", keys)
    assert after["chunk"] == before["chunk"]
    assert after["path"] == str(moved.resolve() / "guide" / "install.md")
    assert run_json("stats")["embedded"] == vectors


def test_copied_folder_end_to_end(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(home, copy)
    monkeypatch.chdir(copy)
    refused = run("scan", ok=False)
    assert refused.exit_code == 1 and "copied or moved" in refused.stderr
    warned = run("query", "rotate keys")
    assert "roots move" in warned.stderr  # queries no longer answer silently
    run(*_fix(refused.stderr))
    hits = run_json("query", "rotate keys")["hits"]
    assert hits and all(h["path"].startswith(str(copy.resolve())) for h in hits)
    (copy / "notes" / "ops.md").write_text(
        "# Operations\n\nRestart the daemon after rotating keys. Quokka.\n", "utf-8"
    )
    out = run_json("scan")
    assert (out["indexed"], out["updated"]) == (0, 1)
    hits = run_json("query", "rotate keys", "--files")["hits"]
    paths = [h["path"] for h in hits]
    assert len(paths) == len(set(paths)) == 2
    assert all(p.startswith(str(copy.resolve())) for p in paths)
    assert run_json("query", "quokka")["hits"][0]["rel_path"] == "notes/ops.md"
    # The original folder's own index is untouched and still its own.
    monkeypatch.chdir(home)
    assert run_json("roots")["roots"][0]["path"] == str(home.resolve())
    assert run_json("query", "quokka")["hits"] == []


def test_a_root_is_never_added_twice(home: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(home, target_is_directory=True)
    for spelling in (".", str(home), str(link), f"{home}/guide/.."):
        run("roots", "add", spelling)
        run("scan", "--root", spelling, "-q")
    assert len(run_json("roots")["roots"]) == 1
    hits = run_json("query", "zebras")["hits"]
    assert len(hits) == 1


def test_nested_roots_are_refused_with_the_fix(home: Path, tmp_path: Path) -> None:
    inner = run("roots", "add", "guide", ok=False)
    assert inner.exit_code == 2 and "inside the root" in inner.stderr
    assert _fix(inner.stderr) == ["scan", "guide"]
    run(*_fix(inner.stderr))
    outer = run("scan", "--root", str(tmp_path), ok=False)
    assert outer.exit_code == 2 and "holds the root" in outer.stderr


def test_roots_add_remove(home: Path, tmp_path: Path) -> None:
    other = write_tree(tmp_path / "other", {"a.md": "# A\n\naardvark facts\n"})
    run("roots", "add", str(other))
    run("scan", "-q")
    listed = {r["path"]: r["documents"] for r in run_json("roots")["roots"]}
    assert listed == {str(home.resolve()): 3, str(other.resolve()): 1}
    assert run_json("query", "aardvark")["hits"]
    change = run_json("roots", "remove", str(other))
    assert change["documents"] == 1
    assert run_json("query", "aardvark")["hits"] == []
    assert (other / "a.md").is_file()  # never the user's files
    missing = run("roots", "remove", str(other), ok=False)
    assert missing.exit_code == 2 and "not a root" in missing.stderr


def test_one_rule_finds_the_index_from_a_named_root(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = resolve_db(None, cwd=elsewhere, near=[home])
    assert found == home.resolve() / ".docindex" / "index.db"
    assert resolve_db(None, cwd=elsewhere) is None
    monkeypatch.chdir(elsewhere)
    # `scan --root X` from another folder adds nothing new: it finds X's index.
    out = run_json("scan", "--root", str(home))
    assert out["unchanged"] == 3 and out["indexed"] == 0


# -- 2. config --------------------------------------------------------------------


def test_config_reports_each_source(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / ".docindex" / "config.toml").write_text("[ranking]\nrrf_k = 30\n")
    monkeypatch.setenv("DOCINDEX_SEMANTIC_WEIGHT", "0.5")
    data = run_json("config")
    settings = data["settings"]
    assert data["schema_version"] == 2
    assert settings["rrf_k"] == {"value": 30.0, "source": "config file "
                                 f"{home.resolve() / '.docindex' / 'config.toml'}"}  # fmt: skip
    assert (
        settings["semantic_weight"]["source"] == "environment DOCINDEX_SEMANTIC_WEIGHT"
    )
    assert settings["roots"]["source"] == "index"
    assert settings["fusion"]["source"] == "default"
    assert data["db"]["source"].startswith("nearest .docindex/")
    flagged = run_json("config", "--db", str(home / ".docindex" / "index.db"))
    assert flagged["db"]["source"] == "flag --db"
    text = run("config").stdout
    assert "rrf_k" in text and "config file" in text and "environment" in text


# -- 3. exit codes and errors -------------------------------------------------------


def test_misuse_exits_2_and_says_what_was_wrong(home: Path) -> None:
    cases = {
        ("show", "guide/install.md#nonexistent"): "has no chunk",
        ("show", "guide/install.md:99999"): "has lines 1-",
        ("show", "nothere.md"): "does not exist",
        ("section", "guide/install.md", "Nope"): "docindex outline guide/install.md",
        ("scan", "no/such/dir"): "does not exist",
        ("scan", "/no/such/place"): "does not exist",
        ("scan", "--root", "/no/such/root"): "does not exist",
        ("query", "keys", "--cursor", "garbage"): "invalid cursor",
        ("query", "--no-such-flag"): "No such option",
        ("query", "keys", "--json", "--context", "2"): "drop --json",
    }
    for args, message in cases.items():
        result = run(*args, ok=False)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
        assert "not in the index" not in result.stderr
        assert "outside" not in result.stderr
    assert run("query", "xylophonequark").exit_code == 0  # zero hits is success


def test_missing_sub_path_that_was_indexed_is_removed(home: Path) -> None:
    shutil.rmtree(home / "notes")
    out = run_json("scan", "notes")
    assert out["removed"] == 1


def test_truncated_index_suggests_a_command_that_works(home: Path) -> None:
    db = home / ".docindex" / "index.db"
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 2)
    broken = run("query", "keys", ok=False)
    assert broken.exit_code == 1 and "damaged" in broken.stderr
    fix = _fix(broken.stderr)
    assert fix[:2] == ["reindex", "--full"]
    run(*fix)
    assert run_json("query", "zebras")["hits"]


def test_damaged_index_elsewhere_names_its_root(tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    db = tmp_path / "db" / "index.db"
    run("scan", str(docs), "-q")
    Path(f"{db}-wal").unlink(missing_ok=True)
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 2)
    failed = run("reindex", "--full", ok=False)
    fix = _fix(failed.stderr)
    assert "--root" in fix
    fix[fix.index("DIR")] = str(docs)
    run(*fix)
    assert run_json("query", "zebras")["hits"]


def _python(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run docindex with stdout a pipe that the reader closed at once."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "docindex", *args], cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `| head` that has read all it wanted
    with proc.stderr:
        err = proc.stderr.read()
    proc.wait(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, b"", err)


@pytest.mark.parametrize(
    "args",
    [["list"], ["outline", "guide/install.md"], ["query", "keys"], ["stats"]],
)
def test_broken_pipe_exits_0_quietly(home: Path, args: list[str]) -> None:
    done = _python(*args, cwd=home)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""


# -- 4. output -----------------------------------------------------------------------


def test_color_switch_and_no_color(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "\x1b[" in run("query", "keys", "--color", "always").stdout
    assert "\x1b[" in run("outline", "guide/install.md", "--color", "always").stdout
    assert "\x1b[" not in run("query", "keys", "--color", "never").stdout
    monkeypatch.setenv("FORCE_COLOR", "1")  # auto off a terminal, colour forced
    assert "\x1b[" in run("query", "keys").stdout
    assert "\x1b[" in run("outline", "guide/install.md").stdout
    monkeypatch.setenv("NO_COLOR", "1")  # wins over FORCE_COLOR ...
    assert "\x1b[" not in run("query", "keys").stdout
    assert "\x1b[" not in run("outline", "guide/install.md").stdout
    assert "\x1b[" in run("query", "keys", "--color", "always").stdout  # ... not a flag


def test_piped_output_has_full_untruncated_paths(tmp_path: Path) -> None:
    deep = "a-rather-long-folder-name/" * 6 + "with-a-long-file-name-at-the-end.md"
    docs = write_tree(tmp_path / "docs", {deep: "# Deep\n\nwombat\n"})
    run("scan", str(docs), "-q")
    listed = run("list").stdout.splitlines()
    assert listed == [f"{docs.resolve() / deep}\tmd\t15\t1\tDeep"]
    assert str(docs.resolve() / deep) in run("query", "wombat").stdout


def test_stats_fits_one_screen(tmp_path: Path) -> None:
    files = {
        f"d{i}.md": "---\n"
        + "".join(f"k{j}: v{i}\n" for j in range(30))
        + "---\n# T\n\nbody text\n"
        for i in range(40)
    }
    docs = write_tree(tmp_path / "docs", files)
    run("scan", str(docs), "-q")
    text = run("stats").stdout
    assert len(text.splitlines()) <= 24
    assert re.search(r"\d+(\.\d)? (B|KB|MB)", text)
    data = run_json("stats")
    assert len(data["facets"]) == 30 and len(data["facets"]["k0"]) == 40


def test_own_index_folder_is_not_counted_hidden(home: Path) -> None:
    out = run_json("scan")
    assert "hidden" not in out["skipped"]


def _command_names(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    names = []
    for name, command in sorted(group.commands.items()):
        names.append((*prefix, name))
        if isinstance(command, click.Group):
            names.extend(_command_names(command, (*prefix, name)))
    return names


@pytest.mark.parametrize("names", _command_names(cli), ids=" ".join)
def test_every_help_ends_with_examples(names: tuple[str, ...]) -> None:
    text = run(*names, "--help").stdout
    assert "Examples:" in text
    tail = text.rstrip().split("Examples:")[-1].strip().splitlines()
    assert 2 <= len(tail) <= 3
    assert all(line.strip().startswith(("docindex", "cp ")) for line in tail)


def test_vimgrep_and_context(home: Path) -> None:
    lines = run("query", "rotate api keys", "--vimgrep").stdout.splitlines()
    first = re.match(r"^(/.+):(\d+):(\d+):(.*)$", lines[0])
    assert first, lines
    path, line, col, text = first.groups()
    source = Path(path).read_text("utf-8").splitlines()[int(line) - 1]
    assert source == text and source.lower()[int(col) - 1 :].startswith(
        ("rotate", "api", "keys")
    )
    shown = run("query", "rotate api keys", "-n", "1", "--context", "1").stdout
    assert "Rotate the api keys every month." in shown
    assert re.search(r">\s+7 Rotate", shown)


def test_watch_says_what_it_watches(home: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "docindex", "watch"], cwd=home,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    assert first.startswith("watching ") and str(home.resolve()) in first


# -- 5. JSON ---------------------------------------------------------------------------


def test_every_json_output_has_a_documented_schema(home: Path) -> None:
    # the README links the full table in docs/reference.md (#45: README to ~600 lines)
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "docs/reference.md#json-output" in readme.split("## JSON output")[1]
    reference = (ROOT / "docs" / "reference.md").read_text("utf-8")
    schema = reference.split("## JSON output")[1].split("\n## ")[0]
    outputs = {
        "scan": run_json("scan"),
        "query": run_json("query", "keys"),
        "stats": run_json("stats"),
        "list": run_json("list"),
        "outline": run_json("outline", "guide/install.md"),
        "show": run_json("show", "guide/install.md"),
        "section": run_json("section", "guide/install.md", "Keys"),
        "related": run_json("related", "guide/install.md"),
        "roots": run_json("roots"),
        "config": run_json("config"),
        "reindex": run_json("reindex"),
        "vacuum": run_json("vacuum"),
    }
    outputs["roots"].update(run_json("roots", "add", "."))  # add/remove/move keys
    for name, data in outputs.items():
        assert data["schema_version"] == 2, name
        row = next(
            (ln for ln in schema.splitlines() if ln.startswith(f"| `{name}` ")), ""
        )
        assert row, f"{name} has no row in docs/reference.md's JSON output table"
        for key in data:
            assert f"`{key}`" in row, (name, key)


def test_scan_json_progress_streams_ndjson(tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    out = run("scan", str(docs), "--json", "--progress").stdout.splitlines()
    events = [json.loads(line) for line in out]
    assert all(e["schema_version"] == 2 for e in events)
    assert {e["event"] for e in events[:-1]} == {"progress"}
    assert events[-1]["event"] == "result" and events[-1]["indexed"] == 3
    assert run("scan", "--progress", ok=False).exit_code == 2


def test_queries_jsonl_carries_ids(home: Path) -> None:
    lines = '{"id": "q1", "query": "rotate keys"}\nzebras\n{"id": 7, "query": "pip"}\n'
    out = [
        json.loads(x)
        for x in run("query", "--queries", "-", input=lines).stdout.splitlines()
    ]
    assert [o.get("id") for o in out] == ["q1", None, 7]
    assert [o["query"] for o in out] == ["rotate keys", "zebras", "pip"]
    bad = run("query", "--queries", "-", input='{"id": 1}\n', ok=False)
    assert bad.exit_code == 2 and "line 1" in bad.stderr


# -- 7. READMEs ------------------------------------------------------------------------


def _outline(name: str) -> tuple[int, set[str]]:
    text = (ROOT / name).read_text("utf-8")
    sections = len(re.findall(r"^## ", text, re.M))
    commands = set(re.findall(r"docindex ([a-z]+)", text))
    return sections, commands & set(cli.commands)


def test_chinese_readme_matches_the_english_one() -> None:
    en_sections, en_commands = _outline("README.md")
    zh_sections, zh_commands = _outline("README.zh.md")
    assert zh_sections == en_sections
    assert zh_commands == en_commands == set(cli.commands)


def test_completion_is_documented_in_both_readmes() -> None:
    for name in ("README.md", "README.zh.md"):
        text = (ROOT / name).read_text("utf-8")
        for shell in ("bash", "zsh", "fish"):
            assert f"_DOCINDEX_COMPLETE={shell}_source docindex" in text, (name, shell)


def test_skip_messages_name_the_folder_the_tests_read() -> None:
    """A skip for missing shared data names the computed path, not a fixed one."""
    for path in sorted((ROOT / "tests").glob("*.py")):
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if "pytest.skip(" in line:
                assert "/work/" not in line, f"{path.name}:{number}: {line.strip()}"


def test_context_counts_lines_within_the_slide(tmp_path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for lines in (["first slide words", "more words here"],
                  ["opening line", "the zebracorn line", "closing line"]):  # fmt: skip
        slide = deck.slides.add_slide(deck.slide_layouts[6])
        box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(3))
        box.text_frame.text = "\n".join(lines)
    docs = tmp_path / "deck"
    docs.mkdir()
    deck.save(str(docs / "talk.pptx"))
    run("scan", str(docs), "-q")
    hit = run_json("query", "zebracorn")["hits"][0]
    assert hit["slide"] == 2
    shown = run("query", "zebracorn", "-n", "1", "--context", "5").stdout
    assert f">{hit['line']:>5} the zebracorn line" in shown
    assert "first slide words" not in shown and "closing line" in shown


def test_scan_with_a_vanished_root_says_how_to_fix_it(tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    run("scan", str(docs), "-q")
    shutil.rmtree(docs)
    out = run_json("scan")
    assert out["removed"] == 0  # its documents are kept until told otherwise
    warning = next(w for w in out["warnings"] if "no longer exists" in w)
    assert f"docindex roots move {docs.resolve()} NEW" in warning
    run(*_fix(warning.split("to forget it, ")[1]))
    assert run_json("roots")["roots"] == []
    assert run_json("stats")["documents"] == 0


def test_scan_outside_the_roots_suggests_a_command_that_works(
    home: Path, tmp_path: Path
) -> None:
    other = write_tree(tmp_path / "other", {"b.md": "# B\n\nbandicoot lore\n"})
    refused = run("scan", str(other / "b.md"), ok=False)
    assert refused.exit_code == 2 and "outside the index's roots" in refused.stderr
    run(*_fix(refused.stderr))
    assert run_json("query", "bandicoot")["hits"][0]["rel_path"] == "b.md"


def test_roots_set_in_a_config_file_are_changed_there(
    home: Path, tmp_path: Path
) -> None:
    config = home / ".docindex" / "config.toml"
    config.write_text(f"roots = [{json.dumps(str(home))}]\n", "utf-8")
    other = write_tree(tmp_path / "other", {"c.md": "# C\n\ncapybara\n"})
    refused = run("roots", "add", str(other), ok=False)
    assert refused.exit_code == 2 and str(config) in refused.stderr


def test_mcp_finds_the_index_scan_made_from_another_folder(
    home: Path, tmp_path: Path
) -> None:
    """`scan --root X` then `mcp --root X` from elsewhere, no --db: the same index."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "docindex", "mcp", "--root", str(home)],
        cwd=str(elsewhere), env=env,
    )  # fmt: skip

    async def stats() -> Any:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool("doc_stats", {})
                    return json.loads(result.content[0].text)

    data = anyio.run(stats)
    assert data["db"] == str(home.resolve() / ".docindex" / "index.db")
    assert data["documents"] == 3
    assert not (elsewhere / ".docindex").exists()
