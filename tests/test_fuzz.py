"""Fuzzing (issue #8): the query CLI, the tokenizer, FTS5 quoting and the extractors.

Queries: any Unicode string (lone surrogates from undecodable argv bytes and
NULs included) with any combination of flags exits 0 or 2, never with a
traceback. Extractors: mutated copies of the shared samples end as an
ExtractionError with a known reason or as text, within a time limit.
``bench/fuzz_extract.py`` runs many more mutations.
"""

from __future__ import annotations

import io
import random
import signal
import sqlite3
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docindex.cli.main import cli
from docindex.errors import ExtractionError
from docindex.ingest.extract import ExtractLimits, get_extractor, kind_for
from docindex.search.candidates import quote_fts
from docindex.store import migrations
from docindex.text.tokenize import iter_terms, query_terms, terms

SHARED_SAMPLES = SHARED / "samples"

# Characters that stress parsers and encoders beyond what st.text() draws.
_NASTY = st.sampled_from(
    ['"', "'", "*", "^", ":", "(", ")", "-", "+", "NEAR(", " AND ", " OR ", " NOT ",
     "\x00", "\udcff", "\ud800", "\u200b", "\ufeff", "\u0301", "𠀀", "ﬁ", "İ", "ß",
     "\n", "\t", "\\", "%", "_", "[", "]", "{", "}", "检索", "テキスト", "한국"]
)  # fmt: skip
ANY_TEXT = st.lists(st.one_of(st.text(max_size=12), _NASTY), max_size=8).map("".join)
SETTINGS = settings(
    max_examples=80, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip


# -- query CLI ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real index with English, CJK and front-matter documents."""
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "docs"
    root.mkdir()
    (root / "a.md").write_text(
        "---\ntags: alpha\n---\n# Keys\n\nRotate the keys every quarter.\n"
    )
    (root / "b.txt").write_text("lazy dogs and quick foxes\n")
    (root / "c.md").write_text("# 检索\n\n全文检索与向量检索的混合排序。\n")
    db = base / "index.db"
    result = CliRunner().invoke(cli, ["scan", str(root), "--db", str(db), "-q"])
    assert result.exit_code == 0, result.output
    return db


@SETTINGS
@given(
    text=ANY_TEXT,
    mode=st.sampled_from(["auto", "lexical", "semantic", "auto", "lexical", "bogus"]),
    files=st.booleans(),
    types=st.lists(ANY_TEXT, max_size=2),
    path=st.one_of(st.none(), ANY_TEXT),
    min_score=st.one_of(
        st.none(),
        st.none(),
        st.floats(0, 1),
        st.floats(allow_nan=True),
        st.sampled_from(["x", ""]),
    ),
    top=st.one_of(st.none(), st.none(), st.integers(1, 1000), st.integers(-5, 1200)),
    as_json=st.booleans(),
)
def test_query_cli_never_crashes(
    fuzz_db: Path, text: str, mode: str, files: bool, types: list[str],
    path: str | None, min_score: object, top: int | None, as_json: bool,
) -> None:  # fmt: skip
    args = ["query", text, "--db", str(fuzz_db), "--mode", mode]
    if files:
        args.append("--files")
    for t in types:
        args += ["--type", t]
    if path is not None:
        args += ["--path", path]
    if min_score is not None:
        args += ["--min-score", str(min_score)]
    if top is not None:
        args += ["--top", str(top)]
    if as_json:
        args.append("--json")
    result = CliRunner().invoke(cli, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code in (0, 2), (args, result.output)
    EXIT_CODES[result.exit_code] = EXIT_CODES.get(result.exit_code, 0) + 1


EXIT_CODES: dict[int, int] = {}


def test_query_fuzz_mostly_reached_the_search() -> None:
    """Guard against a fuzz that only ever tests option parsing."""
    if not EXIT_CODES:
        pytest.skip("run together with test_query_cli_never_crashes")
    assert EXIT_CODES.get(0, 0) >= 10, EXIT_CODES


# -- tokenizer and FTS5 quoting ------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(text=ANY_TEXT, n=st.integers(1, 3), stem=st.booleans())
def test_tokenizer_never_raises(text: str, n: int, stem: bool) -> None:
    index_terms = terms(text, cjk_ngram=n, use_stem=stem)
    assert all(t and " " not in t for t in index_terms)
    assert list(iter_terms(text, cjk_ngram=n, use_stem=stem)) == index_terms
    list(iter_terms(text, cjk_ngram=n, use_stem=stem, query=True))
    query_terms(text, cjk_ngram=n, use_stem=stem)


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """The real schema (migrations) in memory, with a few rows indexed."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrations.migrate(conn)
    conn.executemany(
        "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)",
        [(1, "keys", "rotat the key"), (2, "检 索 检索", "全 文 全文")],
    )
    yield conn
    conn.close()


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_any_quoted_text_can_be_matched(fts: sqlite3.Connection, text: str) -> None:
    fts.execute(
        "SELECT rowid FROM fts WHERE fts MATCH ?", (quote_fts(text),)
    ).fetchall()
    terms_ = query_terms(text)
    if terms_:
        match = " OR ".join(quote_fts(t) for t in terms_)
        fts.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (match,)).fetchall()


# -- extractors on mutated samples ----------------------------------------------------

EXPECTED_REASONS = frozenset(
    {"corrupt", "encrypted", "no-text-layer", "zip-bomb", "too-large", "timeout",
     "unsupported", "error", "binary", "empty"}
)  # fmt: skip
FUZZ_TIMEOUT_S = 30.0  # the indexer's extract_timeout_s default


class Hang(BaseException):
    """An extraction outlived FUZZ_TIMEOUT_S."""


def samples(max_bytes: int = 300_000) -> list[Path]:
    """Shared PDF/OOXML samples up to ``max_bytes``, sorted (deterministic)."""
    if not SHARED_SAMPLES.is_dir():
        pytest.skip(f"shared samples not found at {SHARED_SAMPLES}")
    found = [
        p for p in sorted(SHARED_SAMPLES.rglob("*"))
        if p.is_file() and p.suffix.lower() in (".pdf", ".docx", ".pptx", ".xlsx")
        and p.stat().st_size <= max_bytes
    ]  # fmt: skip
    return found


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random structural mutation of ``data`` (bytes or, for ZIPs, a part)."""
    if data[:2] == b"PK" and rng.random() < 0.6:
        return _mutate_zip_part(data, rng)
    return _mutate_bytes(data, rng)


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    op = rng.choice(["flip", "truncate", "insert", "delete", "duplicate", "zero"])
    pos = rng.randrange(max(1, len(buf)))
    if op == "flip":
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
    elif op == "truncate":
        del buf[pos:]
    elif op == "insert":
        buf[pos:pos] = rng.choice([b"\x00" * 64, b"<<" * 50, b"[" * 500, b"R ",
                                   b"9999999999 0 obj", rng.randbytes(32)])  # fmt: skip
    elif op == "delete":
        del buf[pos : pos + rng.randint(1, 512)]
    elif op == "duplicate":
        buf[pos:pos] = buf[pos : pos + rng.randint(1, 4096)] * rng.randint(2, 8)
    else:
        buf[pos : pos + 256] = b"\x00" * len(buf[pos : pos + 256])
    return bytes(buf)


def _mutate_zip_part(data: bytes, rng: random.Random) -> bytes:
    """Mutate the XML inside one part and re-zip it (CRCs stay valid)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            parts = [(i, zf.read(i)) for i in zf.infolist()]
    except Exception:
        return _mutate_bytes(data, rng)
    xml = [n for n, (i, b) in enumerate(parts) if b.lstrip().startswith(b"<")]
    if not xml:
        return _mutate_bytes(data, rng)
    k = rng.choice(xml)
    info, body = parts[k]
    op = rng.choice(["bytes", "drop-tag", "dup-tag", "attr", "remove-part"])
    if op == "bytes":
        body = _mutate_bytes(body, rng)
    elif op == "drop-tag":
        start = body.find(b"<", rng.randrange(len(body)))
        end = body.find(b">", start)
        if start >= 0 and end > start:
            body = body[:start] + body[end + 1 :]
    elif op == "dup-tag":
        start = body.find(b"<", rng.randrange(len(body)))
        end = body.find(b">", start)
        if start >= 0 and end > start:
            body = body[: end + 1] + body[start : end + 1] * 50 + body[end + 1 :]
    elif op == "attr":
        body = body.replace(b'="', b'="-99999999999', rng.randint(1, 20))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, (i, b) in enumerate(parts):
            if n == k:
                if op != "remove-part":
                    zf.writestr(i.filename, body)
            else:
                zf.writestr(i.filename, b)
    return out.getvalue()


def extract_bounded(data: bytes, name: str, timeout: float = FUZZ_TIMEOUT_S) -> str:
    """Extract with a wall-clock limit; return ``ok`` or the skip reason."""
    kind = kind_for(name)
    assert kind is not None

    def fire(signum: int, frame: object) -> None:
        raise Hang(f"{name}: extraction took over {timeout} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        get_extractor(kind)(data, name, ExtractLimits())
        return "ok"
    except ExtractionError as exc:
        assert exc.reason in EXPECTED_REASONS, (name, exc.reason, str(exc))
        assert "\n" not in str(exc)
        return exc.reason
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM")
def test_extractors_survive_mutated_samples() -> None:
    """30 seeded mutations across PDF, DOCX, PPTX and XLSX samples."""
    found = samples()
    by_kind: dict[str, list[Path]] = {}
    for path in found:
        by_kind.setdefault(path.suffix.lower(), []).append(path)
    rng = random.Random(20261130)
    outcomes: dict[str, int] = {}
    for i in range(30):
        suffix = sorted(by_kind)[i % len(by_kind)]
        path = rng.choice(by_kind[suffix])
        data = mutate(path.read_bytes(), rng)
        got = extract_bounded(data, path.name)
        outcomes[got] = outcomes.get(got, 0) + 1
    assert sum(outcomes.values()) == 30
