"""The one tokenizer: normalisation, stemming, CJK n-grams, never raising."""

from hypothesis import given
from hypothesis import strategies as st

from docindex.text.tokenize import cjk_ratio, has_cjk, query_terms, terms


def test_nfkc_casefold_and_stem() -> None:
    assert terms("Ｉｎｄｅｘｉｎｇ the FILES") == ["index", "the", "file"]


def test_identifiers_split_on_underscore_and_keep_digits() -> None:
    # the joined name follows the words (issue #47)
    assert terms("max_docs x86 utf8") == ["max", "doc", "x86", "utf8", "maxdoc"]


def test_identifiers_add_their_words_and_joined_names() -> None:
    """Issue #47: camel case split into words, joined names kept whole."""
    assert terms("CORSMiddleware") == ["corsmiddlewar", "cor", "middlewar"]
    assert terms("PodDisruptionBudget") == [
        "poddisruptionbudget", "pod", "disrupt", "budget",
    ]  # fmt: skip
    assert terms("useState") == ["usest", "use", "state"]
    assert terms("key-auth os.path") == [
        "key",
        "auth",
        "os",
        "path",
        "keyauth",
        "ospath",
    ]
    # the same name however it is joined or cased
    assert terms("max_retries")[-1] == terms("MaxRetries")[0] == "maxretri"
    # versions, one-letter pieces and plain words add nothing
    assert terms("3.11.7 e.g. IPv6 index") == [
        "3",
        "11",
        "7",
        "e",
        "g",
        "ipv6",
        "index",
    ]


def test_query_terms_hold_identifier_words() -> None:
    assert query_terms("max_retries") == ["max", "retri", "maxretri"]
    assert query_terms("CORSMiddleware") == ["corsmiddlewar", "cor", "middlewar"]
    assert query_terms("how do I add CORS middleware") == ["add", "cor", "middlewar"]


def test_cjk_unigrams_and_bigrams_at_index_time() -> None:
    assert terms("全文检索") == ["全", "文", "检", "索", "全文", "文检", "检索"]


def test_cjk_query_uses_longest_ngrams() -> None:
    assert query_terms("全文检索") == ["全文", "文检", "检索"]
    assert query_terms("索") == ["索"]


def test_trigram_depth() -> None:
    assert "全文检" in terms("全文检索", cjk_ngram=3)
    assert query_terms("全文检索", cjk_ngram=3) == ["全文检", "文检索"]


def test_japanese_korean_and_astral_han() -> None:
    assert "検索" in terms("検索エンジン")
    assert "エン" in terms("検索エンジン")
    assert "색인" in terms("검색 색인")
    astral = "\U00020000\U00020001"
    assert astral in terms(astral)


def test_stopwords_dropped_from_queries_only_when_others_remain() -> None:
    assert query_terms("how do I configure the index") == ["configur", "index"]
    assert query_terms("the who") == ["the", "who"]
    assert "the" in terms("the index")


def test_mixed_script() -> None:
    assert query_terms("SQLite 全文检索") == ["sqlite", "全文", "文检", "检索"]
    assert has_cjk("abc 中") and not has_cjk("abc")
    assert cjk_ratio("中文ab") == 0.5


@given(st.text())
def test_tokenizer_never_raises(text: str) -> None:
    for term in terms(text) + query_terms(text):
        assert term and " " not in term


def test_is_cjk_and_ascii_token_path_agree_with_the_regexes() -> None:
    """Cheaper query-time helpers (issue #7) give exactly the regexes' answers."""
    import re

    from docindex.text.tokenize import _CJK, _TOKEN_RE, is_cjk, token_matches

    cjk = re.compile(f"[{_CJK}]")
    for code in [*range(0, 0x3500, 7), *range(0x9F00, 0xAD00, 3), 0x20000, 0x323AF,
                 0x323B0, 0xFF66, 0xFFA0, 0x3005, 0x3006]:  # fmt: skip
        assert is_cjk(chr(code)) == bool(cjk.match(chr(code))), hex(code)
    for text in ["Fetch_the x9 café", "a-b_c 123", "", "中文 and 한국어", "x" * 50]:
        got = [(m.span(), m.groups()) for m in token_matches(text)]
        assert got == [(m.span(), m.groups()) for m in _TOKEN_RE.finditer(text)]


def _reference_parts(text: str) -> tuple[list[str], list[str]]:
    """term_parts without the blanking shortcut: tokens of the plain NFKC text."""
    import re

    from docindex.text.tokenize import _CJK, _LATIN_RE, identifier_words, normalize

    norm = normalize(text)
    words = _LATIN_RE.findall(norm) + identifier_words(text)
    return words, re.findall(f"[{_CJK}]+", norm)


def test_blanked_compatibility_characters_are_separators_in_nfkc() -> None:
    """Every character term_parts blanks before NFKC normalises to non-term text."""
    import unicodedata

    from docindex.text.tokenize import _SEPARATOR_COMPAT_RE, term_parts

    blanked = [chr(c) for c in range(0x110000) if _SEPARATOR_COMPAT_RE.match(chr(c))]
    assert len(blanked) == 37 and "，" in blanked and "ａ" not in blanked
    for ch in blanked:
        assert unicodedata.normalize("NFKC", ch) != ch
        assert term_parts(f"a{ch}b中{ch}文", use_stem=False) == (
            ["a", "b"],
            ["中", "文"],
        )
        assert _reference_parts(f"a{ch}b中{ch}文") == (["a", "b"], ["中", "文"])


_TRICKY = "，．：（）；！？＝＃\xa0\u2009\u3000…ａＡ１＿ﬁ⾏ά\u0301\u0338 x中文한"


@given(st.text(alphabet=st.sampled_from(_TRICKY)) | st.text())
def test_term_parts_equal_plain_nfkc_tokens(text: str) -> None:
    from docindex.text.tokenize import term_parts

    # Short texts (queries) take one regex, long ones two and the blanking.
    long = (text + "\n") * (300 // (len(text) + 1) + 1)
    assert len(long) > 256
    for sample in (text, long):
        assert term_parts(sample, use_stem=False) == _reference_parts(sample)


def _reference_identifier_words(text: str) -> list[str]:
    """Issue #47's ``identifier_words`` as first written (the oracle): the plain
    pattern tried at every position, each name split in Python."""
    import re
    import unicodedata

    from docindex.text.tokenize import _camel_words

    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    pattern = (
        r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)+"
        r"|[A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z][a-z])[A-Za-z0-9]*"
    )
    out: list[str] = []
    for name in re.findall(pattern, text):
        pieces = re.split(r"[._-]", name)
        if len(pieces) > 1 and any(sum(c.isalpha() for c in p) >= 2 for p in pieces):
            out.append("".join(pieces).lower())
        for piece in pieces:
            if re.search(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z][a-z]", piece):
                words = _camel_words(piece)
                if len(words) > 1:
                    out.extend(words)
    return out


@given(st.text(alphabet="aZbQx1._- \nÉé(", max_size=40))
def test_identifier_words_find_the_names_the_plain_pattern_finds(text: str) -> None:
    """Issue #46: names are searched from the start of a run only, and each
    name's words are worked out once per process; the words are those the
    plain pattern gives, in order."""
    from docindex.text.tokenize import identifier_words

    expected = _reference_identifier_words(text)
    assert identifier_words(text) == expected
    assert identifier_words(text) == expected  # memoised the second time


def test_identifier_words_after_dots_and_inside_words() -> None:
    from docindex.text.tokenize import identifier_words

    text = "end. Next a..bC fooBar.baz x-1.2 ÉtatDeLieu e.g. HTTPServer. max_docs"
    expected = _reference_identifier_words(text)
    assert identifier_words(text) == expected
    assert expected == "foobarbaz foo bar tat de lieu http server maxdocs".split()
