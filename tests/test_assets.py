"""Code and assets are not documents: left out by default, each with its reason (#45)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run, run_json, write_tree

from docindex.models import SkipReason

SVG = '<svg xmlns="http://www.w3.org/2000/svg"><text>sponsor ingress</text></svg>\n'
ASSETS = {
    "img/logo.svg": SVG,
    "css/site.css": "body { color: red } /* ingress */\n",
    "js/app.js": "console.log('ingress controller')\n",
    "js/app.min.js": "var a='ingress controller';\n",
    "js/app.js.map": '{"version":3,"sources":["ingress.ts"]}\n',
    "src/types.ts": "export type Ingress = { host: string }\n",
    "web/package-lock.json": '{"name": "ingress", "lockfileVersion": 3}\n',
    "web/yarn.lock": "ingress@1.0.0:\n  version 1.0.0\n",
    "diagrams/flow.mmd": "graph TD\n  A[ingress] --> B[service]\n",
    "diagrams/seq.puml": "@startuml\nAlice -> Ingress\n@enduml\n",
    "diagrams/net.dot": "digraph net {\n  ingress -> service;\n}\n",
}
REASONS = {
    "img/logo.svg": "vector-image",
    "css/site.css": "stylesheet",
    "js/app.js": "script",
    "js/app.min.js": "minified",
    "js/app.js.map": "source-map",
    "src/types.ts": "script",
    "web/package-lock.json": "lock-file",
    "web/yarn.lock": "lock-file",
    "diagrams/flow.mmd": "diagram-source",
    "diagrams/seq.puml": "diagram-source",
    "diagrams/net.dot": "diagram-source",
}
GUIDE = "# Ingress\n\nAn ingress routes outside traffic to a service.\n"


def test_assets_are_skipped_each_with_its_reason(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", {**ASSETS, "guide.md": GUIDE,
                                          "notes.py": "# ingress helper\n"})  # fmt: skip
    db = str(tmp_path / "i.db")
    scan = run_json("scan", str(root), "--db", db)
    assert scan["indexed"] == 2  # guide.md, notes.py: code that is not an asset stays
    listed = run_json("skipped", "--db", db)["files"]
    assert {f["rel_path"]: f["reason"] for f in listed} == REASONS
    assert all("text_extensions" in f["message"] for f in listed)
    for reason in set(REASONS.values()):
        assert reason in {r.value for r in SkipReason}
        only = run_json("skipped", "--db", db, "--reason", reason)["files"]
        assert only and {f["reason"] for f in only} == {reason}
    counts = run_json("stats", "--db", db)["skipped"]
    assert counts["vector-image"] == 1 and counts["diagram-source"] == 3
    hits = run_json("query", "ingress", "--db", db, "--top", "20")["hits"]
    assert {h["rel_path"] for h in hits} <= {"guide.md", "notes.py"}
    # counted by the scan, not printed one by one
    human = run("scan", str(root), "--db", db, "--force")
    assert "logo.svg" not in human.output


def test_text_extensions_opts_assets_back_in(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", {**ASSETS, "guide.md": GUIDE})
    config = tmp_path / "config.toml"
    config.write_text(
        'text_extensions = [".svg", "mmd", ".min.js", ".dot", "package-lock.json"]\n'
    )
    db = str(tmp_path / "i.db")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCINDEX_CONFIG", str(config))
        run_json("scan", str(root), "--db", db)
    indexed = {d["rel_path"] for d in run_json("list", "--db", db)["documents"]}
    opted = {"img/logo.svg", "diagrams/flow.mmd", "js/app.min.js", "diagrams/net.dot",
             "web/package-lock.json"}  # fmt: skip
    assert opted <= indexed
    assert "js/app.js" not in indexed and "css/site.css" not in indexed


def test_assets_indexed_before_leave_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index from before #45 held the SVGs (read as text by their content):
    the next scan drops them."""
    from docindex.store import Store

    root = write_tree(tmp_path / "docs", {"img/logo.svg": SVG, "guide.md": GUIDE})
    config = tmp_path / "mine" / "config.toml"  # not beside the index
    config.parent.mkdir()
    config.write_text('text_extensions = [".svg"]\n')
    monkeypatch.setenv("DOCINDEX_CONFIG", str(config))
    db = tmp_path / "i.db"
    assert run_json("scan", str(root), "--db", str(db))["indexed"] == 2
    monkeypatch.delenv("DOCINDEX_CONFIG")
    with Store.open(db) as store, store.atomic():  # as an older docindex left it
        settings = store.get_meta("settings")
        store.set_meta("settings", {**settings, "text_extensions": []})
    again = run_json("scan", str(root), "--db", str(db))
    assert again["removed"] == 1 and again["skipped"] == {"vector-image": 1}, str(again)


def test_a_word_template_named_dot_is_not_a_diagram(tmp_path: Path) -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    root = write_tree(tmp_path / "docs", {"letter.dot": ole,
                                          "old-readme.dot": "Plain words here.\n"})  # fmt: skip
    db = str(tmp_path / "i.db")
    run_json("scan", str(root), "--db", db)
    listed = {
        f["rel_path"]: f["reason"] for f in run_json("skipped", "--db", db)["files"]
    }
    assert listed == {"letter.dot": "unsupported"}
