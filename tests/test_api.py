"""The public Python API (issue #32), used as a script would: only ``docindex.*`` names."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import docindex


def _tree(root: Path) -> Path:
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "install.md").write_text(
        "# Installing Kestrel\n\nKestrel needs Python.\n\n"
        "## Configuring the port\n\nSet `port = 8080` in config.toml to change "
        "the listening port of the server.\n\n## Upgrading\n\nRun the installer "
        "again; your settings are kept.\n",
        "utf-8",
    )
    (root / "notes.txt").write_text("Meeting notes: the port moved to 9090.\n", "utf-8")
    return root


SCRIPT = """
import sys
from pathlib import Path

import docindex

root, db = Path(sys.argv[1]), sys.argv[2]
index = docindex.open(db, roots=[root])
result = index.scan()
assert isinstance(result, docindex.ScanResult), result
assert result.indexed == 2, result

found = index.query("configure the listening port", top=3)
assert isinstance(found, docindex.QueryResult)
hit = found.hits[0]
assert isinstance(hit, docindex.Hit)
assert hit.rel_path == "guide/install.md", hit
assert hit.heading_path == ["Installing Kestrel", "Configuring the port"], hit
assert 0.0 <= hit.score <= 1.0 and hit.line == 5, hit

files = index.query("port", files=True, types=["txt"])
assert [h.rel_path for h in files.hits] == ["notes.txt"], files

outline = index.outline(str(root / "guide" / "install.md"))
assert isinstance(outline, docindex.Outline)
assert [e.text for e in outline.outline][:2] == [
    "Installing Kestrel", "Configuring the port"], outline
shown = index.show(hit.chunk_id)
assert isinstance(shown, docindex.Shown) and "8080" in shown.chunk.text
section = index.section("guide/install.md", "Upgrading")
assert isinstance(section, docindex.Section) and "installer" in section.text
assert isinstance(index.related(hit.chunk_id), docindex.Related)
listing = index.documents()
assert [d.rel_path for d in listing.documents] == ["guide/install.md", "notes.txt"]

stats = index.stats()
assert isinstance(stats, docindex.IndexStats) and stats.documents == 2, stats
assert isinstance(index.skipped(), docindex.SkippedFiles)
roots = index.list_roots()
assert [r.path for r in roots.roots] == [str(root.resolve())], roots

try:
    docindex.open(str(Path(db).parent / "missing.db")).query("port")
except docindex.IndexNotFoundError as exc:
    assert "no index at" in str(exc)
else:
    raise AssertionError("no error for a missing index")
try:
    index.query("port", top=0)
except docindex.DocindexError as exc:
    assert isinstance(exc, docindex.BadInputError), exc
else:
    raise AssertionError("top=0 accepted")

with index.watch(debounce_ms=50) as changes:
    batches = iter(changes)
    first = next(batches)  # the catch-up scan
    assert isinstance(first, docindex.BatchReport) and first.kind == "catch-up"
    (root / "new.md").write_text("# New\\n\\nA fresh page about zeppelins.\\n")
    for batch in batches:
        if batch.added:
            break
assert index.query("zeppelins").hits[0].rel_path == "new.md"
print("ok")
"""


def test_a_script_using_only_public_names(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs")
    script = tmp_path / "use_docindex.py"
    script.write_text(textwrap.dedent(SCRIPT), "utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(root), str(tmp_path / "idx" / "index.db")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize("name", sorted(set(docindex.__all__) - {"__version__"}))
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(docindex, name) is not None
    assert name in dir(docindex)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError):
        docindex.no_such_thing  # type: ignore[attr-defined] # noqa: B018


def test_importing_docindex_stays_light() -> None:
    """``import docindex`` loads no part of the library until a name is used."""
    code = (
        "import sys, docindex\n"
        "print(sorted(m for m in sys.modules if m.startswith('docindex.')))\n"
        "docindex.open\n"
        "print('docindex.api.index' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout.split("\n")  # fmt: skip
    assert out[0] == "[]"
    assert out[1] == "True"


def test_the_errors_are_one_family() -> None:
    for name in docindex.__all__:
        value = getattr(docindex, name)
        if name.endswith("Error"):
            assert issubclass(value, docindex.DocindexError), name


def test_the_readmes_python_example_runs(tmp_path: Path) -> None:
    """The README's "Use from Python" block, run as printed in a copy of example/."""
    import re
    import shutil

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    part = readme[readme.index("## Use from Python") :]
    code = re.search(r"```python\n(.*?)```", part, re.S)
    assert code is not None
    folder = tmp_path / "example"
    shutil.copytree(Path(__file__).resolve().parents[1] / "example", folder,
                    ignore=shutil.ignore_patterns(".docindex"))  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code[1]], cwd=folder,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].endswith("files indexed") and int(lines[0].split()[0]) > 10
    assert "configuring.md" in lines[1], done.stdout


def test_the_command_line_client_imports_little() -> None:
    """The ``docindex`` entry point's first imports (every served command pays
    them): no ``typing``, ``enum``, ``re`` or ``json`` (issue #24's 8-16 ms)."""
    code = (
        "import sys; before = set(sys.modules)\n"
        "import docindex.cli.launcher\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    root = Path(__file__).resolve().parents[1]  # -S: no site; import from here
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True,
                         text=True, check=True, cwd=root).stdout  # fmt: skip
    loaded = eval(out)  # a printed list of module names
    for heavy in ("typing", "enum", "re", "json", "socket", "click"):
        assert heavy not in loaded, (heavy, loaded)
