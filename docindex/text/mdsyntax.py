"""What a Markdown/MDX renderer hides, and how headings read once rendered (issue #19).

Shared by the Markdown extractor (which blanks hidden text before anything
else sees it) and the segmenter (which cleans heading text and takes explicit
anchors). Pure functions over strings; nothing here imports the rest of docindex.

Hidden text is replaced by spaces, newlines kept, so line numbers and even
character offsets still match the file. Outside fenced code, these are hidden:

- HTML comments starting a line (CommonMark HTML block, kind 2), to the line
  holding ``-->``; an unclosed one is left as text (CommonMark would hide the
  rest of the file, which then could never be found);
- MDX comments ``{/* ... */}`` outside inline code, except a heading's
  ``{/*slug*/}`` anchor, which the segmenter reads and drops;
- MDX ``import``/``export`` lines and lines that hold only a JSX/HTML tag
  (``<Tabs>``, ``<TabItem value="adc">``, ``</DeepDive>``); the text between
  the tags stays;
- admonition markers: ``:::note``, ``:::`` (VitePress, Docusaurus), ``!!! tip``
  and ``???+ note`` (MkDocs; a quoted title stays);
- link reference definitions on one line (``[id]: /url "title"``), which
  pages also use as comments (``[//]: <TODO: ...>``, ``[//]: # (note)``),
  where one may start: after a blank line, a heading, a closing fence or
  something hidden, not inside a paragraph.
"""

from __future__ import annotations

import re

# A fence opener after at most 3 spaces; group 2 is the rest of the line.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.M)
# Searched in "\n" + text: each line-start form begins with the newline
# before it, so every alternative starts with "\n" or "{" and the regex engine
# skips ahead to those two characters in C, where "^" alternatives were tried
# at every position: 3x faster over the shared corpus (issue #22, full scan).
_HIDDEN = re.compile(
    r"\n(?: {0,3}<!--"  # an HTML comment block
    r"|(?:import|export)[ \t{*]"  # MDX ESM
    r"|[ \t]*<[/A-Za-z][^\n]*>[ \t]*$"  # a line that may be one tag
    r"|[ \t]*<[A-Za-z][\w.:-]*(?:[ \t][^\n>]*)?$"  # a tag that goes on below
    r"|[ \t]*(?::::+|!!!|\?\?\?\+?)"  # an admonition marker
    r"| {0,3}\[(?!\]))"  # a link reference definition
    r"|\{/\*",  # an MDX comment
    re.M,
)
_ESM = re.compile(
    r"(?:import\s+(?:[\w*{},\s]+\s+from\s+)?['\"]|export\s+(?:default|const|function"
    r"|let|var|class|async|\{|\*))"
)
_ONE_TAG = re.compile(
    r"[ \t]*</?[A-Za-z][\w.:-]*(?:\s+[^\s=>/]+(?:=(?:\"[^\"]*\"|'[^']*'|\{[^}\n]*\}"
    r"|[^\s>]+))?)*\s*/?>[ \t]*"
)
_ADMONITION = re.compile(
    r"[ \t]*(?::::+[ \t]*[\w-]*(?:\[[^\]]*\]|\{[^}]*\})?|(?:!!!|\?\?\?\+?)[ \t]*"
    r"[\w-]*(?:[ \t]+[\w-]+)*[ \t]*(?=\"|$))"
)
_ANCHOR_COMMENT = re.compile(r"\{/\*\s*[\w-]+\s*\*/\}")
# CommonMark 4.7 on one line: label, destination, optional quoted title.
_LINK_DEF = re.compile(
    r" {0,3}\[((?:[^\[\]\\\n]|\\.){1,999})\]:[ \t]*(?:<[^<>\n]*>|[^\s<]\S*)"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*"
)
# A line after which a link reference definition may start.
_BLOCK_END = re.compile(
    r"[ \t]*| {0,3}#{1,6}(?:[ \t][^\n]*)?| {0,3}(?:`{3,}|~{3,})[ \t]*"
)


def _blank(text: str) -> str:
    """``text`` with every character but newlines turned into a space."""
    return re.sub(r"[^\n]", " ", text)


def _fences(text: str) -> list[tuple[int, int]]:
    """[start, end) offsets of the fenced code blocks, per CommonMark.

    A fence closes at a line of the same character, at least as long, after
    at most 3 spaces and followed by blanks only; a backtick fence's info
    string has no backtick. An unclosed fence runs to the end.
    """
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        opener = _FENCE.search(text, pos)
        if opener is None:
            return out
        mark, info = opener[1], opener[2]
        if mark[0] == "`" and "`" in info:
            pos = opener.end() + 1
            continue
        closer = re.compile(
            rf"^ {{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$", re.M
        ).search(text, opener.end() + 1)
        end = closer.end() if closer else len(text)
        out.append((opener.start(), end))
        pos = end + 1


def hide_unrendered(text: str) -> str:
    """Blank what a Markdown/MDX renderer does not show as text (see module doc)."""
    nl_text = "\n" + text
    if not _HIDDEN.search(nl_text):
        return text
    fences = _fences(text)
    pieces: list[str] = []
    done = 0
    k = 0
    for match in _HIDDEN.finditer(nl_text):
        # A line-start form's match starts at the newline before the line,
        # which is the line's own offset in ``text``; "{/*" is one further.
        found = match[0]
        at = match.start()
        if found[0] == "\n":
            found = found[1:]
        else:
            at -= 1
        if at < done:
            continue
        while k < len(fences) and fences[k][1] <= at:
            k += 1
        if k < len(fences) and fences[k][0] <= at:
            continue  # inside fenced code: shown as written
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        token = found.lstrip(" \t")
        if token.startswith("<!--"):
            close = text.find("-->", at)
            if close < 0:
                continue
            end = text.find("\n", close)
            end = len(text) if end < 0 else end
            pieces += [text[done:at], _blank(text[at:end])]
            done = end
        elif token.startswith("{/*"):
            close = text.find("*/}", at)
            line_start = text.rfind("\n", 0, at) + 1
            if close < 0 or text.count("`", line_start, at) % 2:
                continue  # unclosed, or inside inline code
            if _ANCHOR_COMMENT.match(text, at) and _is_heading_line(text, line_start):
                continue  # a heading's explicit anchor: the segmenter reads it
            pieces += [text[done:at], _blank(text[at : close + 3])]
            done = close + 3
        elif token.startswith(("import", "export")):
            if _ESM.match(text, at):
                pieces += [text[done:at], _blank(text[at:line_end])]
                done = line_end
        elif token.startswith("<"):
            if _ONE_TAG.fullmatch(text, at, line_end):
                pieces += [text[done:at], _blank(text[at:line_end])]
                done = line_end
            else:
                tag_end = _tag_end(text, at)
                if tag_end is not None:
                    pieces += [text[done:at], _blank(text[at:tag_end])]
                    done = tag_end
        elif token.startswith("["):
            link_def = _LINK_DEF.fullmatch(text, at, line_end)
            if link_def and link_def[1].strip() and _may_define(text, at, done):
                pieces += [text[done:at], _blank(text[at:line_end])]
                done = line_end
        else:
            marker = _ADMONITION.match(text, at, line_end)
            if marker is not None:
                rest = text[marker.end() : line_end]
                title = rest.strip().strip('"')
                pieces += [
                    text[done:at],
                    _blank(text[at : marker.end()]),
                    rest.replace('"', " ") if title else _blank(rest),
                ]
                done = line_end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _may_define(text: str, at: int, hidden_to: int) -> bool:
    """True when a link reference definition may start at ``at`` (a line
    start): it cannot interrupt a paragraph (CommonMark 4.7)."""
    if at == 0 or at - 1 == hidden_to:
        return True  # the file's first line, or the line below hidden text
    prev = text.rfind("\n", 0, at - 1) + 1
    return _BLOCK_END.fullmatch(text, prev, at - 1) is not None


_MAX_TAG_CHARS = 4000  # a multi-line JSX tag longer than this is left as text


def _tag_end(text: str, at: int) -> int | None:
    """End of the line closing a JSX tag opened at ``at`` over several lines.

    Docusaurus pages write ``<Tabs`` then ``values={[`` ... ``]}>`` on lines of
    their own (issue #37: ``{label: 'ADC', value: 'adc'} ]}>`` in snippets).
    The ``>`` that closes the tag is the first one outside quotes and braces;
    only blanks may follow it on its line, else the tag is inline text.
    """
    depth = 0
    quote = ""
    stop = min(len(text), at + _MAX_TAG_CHARS)
    i = text.index("<", at) + 1
    while i < stop:
        char = text[i]
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif char == "<" and depth == 0:
            return None  # another tag starts: not one tag
        elif char == ">" and depth == 0:
            line_end = text.find("\n", i)
            line_end = len(text) if line_end < 0 else line_end
            return line_end if not text[i + 1 : line_end].strip() else None
        i += 1
    return None


def _is_heading_line(text: str, line_start: int) -> bool:
    return (
        re.match(r" {0,3}#{1,6}[ \t]", text[line_start : line_start + 10]) is not None
    )


# An MDX anchor ``{/*id*/}`` closing a heading (Docusaurus).
_MDX_ANCHOR = re.compile(r"[ \t]*\{/\*\s*([\w-]+)\s*\*/\}[ \t]*$")
# An attribute list closing a heading: ``{#id}``, ``{ #id }``, ``{#id .class
# key=value}``, kramdown's ``{: #id}`` (MkDocs attr_list, issue #45). This is
# Python-Markdown's ``AttrListTreeprocessor.HEADER_RE`` but for the blanks
# before it, which Docusaurus's ``## Title{#id}`` does without.
_ATTR_LIST = re.compile(r"[ \t]*\{(:?)[ ]*([^}\n ][^\n]*)\}[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# (?<!\\): an escaped "<" is literal text, not a tag (CommonMark 2.4;
# Vue's "# \<script setup>" renders as "<script setup>", issue #37).
_TAG = re.compile(
    r"(?<!\\)</?[A-Za-z][\w.:-]*(?:\s+[^\s=>/]+(?:=(?:\"[^\"]*\"|'[^']*'|\{[^}]*\}"
    r"|[^\s>]+))?)*\s*/?>"
)
_EMPHASIS = re.compile(r"(?<![\w\\])(\*{1,3}|_{1,3})(?=\S)(.+?)(?<=\S)\1(?!\w)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


# Python-Markdown's attr_list scanner, rule for rule and in its order: a
# key="quoted", key='quoted', key=value, a word (#id, .class, a bare key) or a
# blank. Not imported from there: `markdown` costs 26-36 ms to import, paid by
# every `query` and `show` whose text holds such a heading (measured, #45);
# tests/test_markdown_attrs.py checks this against the library.
_ATTR_TOKEN = re.compile(
    r"""([^ =}]+)=(?:"(.*?)"|'(.*?)')|([^ =}]+)=([^ =}]+)|([^ =}]+)| """
)


def attr_list(text: str) -> list[tuple[str, str | None]] | None:
    """The (key, value) pairs of an attribute list's inside, as MkDocs reads them.

    ``#x`` is ("id", "x"), ``.c`` is (".", "c"), a bare word ``w`` is ("w",
    None). None when text other than attributes is left before a ``}``
    (Python-Markdown's strict reading: then it is no attribute list).
    """
    out: list[tuple[str, str | None]] = []
    pos = 0
    while pos < len(text):
        m = _ATTR_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        if m[1] is not None:
            out.append((m[1], m[2] if m[2] is not None else m[3]))
        elif m[4] is not None:
            out.append((m[4], m[5]))
        elif m[6] is not None:
            word = m[6]
            if word[0] in ".#":
                out.append(("." if word[0] == "." else "id", word[1:]))
            else:
                out.append((word, None))
    return None if "}" in text[pos:] else out


def explicit_anchor(raw: str) -> tuple[int, str | None]:
    """(where the heading's closing anchor or attribute list starts, its id).

    ``(len(raw), None)`` when ``raw`` ends in neither. An attribute list is read
    as MkDocs reads it (Python-Markdown's attr_list parser): ``{ #id .c k=v }``
    gives ``id``; one without an id is still dropped from the text. A brace
    pair that is not an attribute list (``{x}``, ``{a} b}``) stays text: it needs
    a ``#id``, ``.class`` or ``key=value``, or kramdown's leading ``:``.
    """
    if not raw.endswith("}"):
        return len(raw), None
    mdx = _MDX_ANCHOR.search(raw)
    if mdx is not None:
        return mdx.start(), mdx[1]
    found = _ATTR_LIST.search(raw)
    attrs = None if found is None else attr_list(found[2])
    if found is None or not attrs:
        return len(raw), None
    if not found[1] and not any(k in ("id", ".") or v is not None for k, v in attrs):
        return len(raw), None  # "{x}": a word in braces, not attributes
    ids = [v for k, v in attrs if k == "id" and v]
    return found.start(), (ids[-1] if ids else None)


def heading_text(raw: str) -> tuple[str, str | None]:
    """(text as rendered, explicit anchor or None) of an ATX/setext heading's text.

    ``Usage {/*usage*/}`` -> ("Usage", "usage"); ``inject {#inject}`` and
    ``inject { #inject .c }`` -> ("inject", "inject"); ``\\*\\*Note\\*\\*`` ->
    ("**Note**", None); ``**Bold** [link](/x) <sup class="b" />`` -> ("Bold
    link", None). Code spans keep their content literally
    (``\\`<Suspense>\\``` -> "<Suspense>").
    """
    cut, anchor = explicit_anchor(raw)
    raw = raw[:cut]
    pieces: list[str] = []
    pos = 0
    for span in _CODE_SPAN.finditer(raw):
        pieces.append(_inline(raw[pos : span.start()]))
        pieces.append(span[2].strip())
        pos = span.end()
    pieces.append(_inline(raw[pos:]))
    return " ".join("".join(pieces).split()), anchor


def _inline(text: str) -> str:
    text = _ANCHOR_COMMENT.sub(" ", text)
    text = re.sub(r"\{/\*.*?\*/\}", " ", text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    text = _EMPHASIS.sub(r"\2", text)
    return _ESCAPE.sub(r"\1", text)
