"""Document filters (``DocFilter``) as PostgreSQL SQL over ``documents d``
(``store/_sql.filter_sql`` for SQLite; issue #34)."""

from __future__ import annotations

from docindex.store.records import DocFilter

ALL_DOCS = DocFilter()


def glob_regex(pattern: str) -> str:
    """A SQLite GLOB pattern as an anchored PostgreSQL regex (``*`` crosses ``/``).

    Character sets are read as GLOB reads them (``text.globs``); inside one,
    ``[`` and ``\\`` are escaped, so ``[[.]`` or ``[^]x]`` are sets here too,
    not a collating element or an unbalanced bracket (issue #44).
    """
    from docindex.text.globs import bracket_sets

    sets = {b.start: b for b in bracket_sets(pattern)}
    out = ["^"]
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        found = sets.get(i)
        if found is not None:
            body = found.body.replace("\\", "\\\\").replace("[", "\\[")
            out.append("[" + ("^" if found.negated else "") + body + "]")
            i = found.end
        elif ch == "[":
            return "(?!)"  # an unclosed "[": GLOB matches nothing, nor do we
        elif ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append("\\" + ch if not ch.isalnum() else ch)
        i += 1
    out.append("$")
    return "".join(out)


def filter_sql(only: DocFilter) -> tuple[str, list[object]]:
    """SQL over ``documents d`` for a DocFilter (``_sql.filter_sql`` for PostgreSQL)."""
    clauses: list[str] = []
    params: list[object] = []
    if only.root_ids is not None:
        clauses.append("d.root_id = ANY(%s)")
        params.append(list(only.root_ids))
    if only.kinds:
        clauses.append("d.kind = ANY(%s)")
        params.append([t.lower().lstrip(".") for t in only.kinds])
    if only.path_glob:
        clauses.append("d.rel_path ~ %s")
        params.append(glob_regex(only.path_glob))
    if only.path:
        path = only.path.replace("\\", "/")
        while path.startswith("./"):
            path = path[2:]
        if set("*?[") & set(path):
            clauses.append("d.rel_path ~ %s")
            params.append(glob_regex(path))
        elif path.rstrip("/"):
            folder = path.rstrip("/")
            clauses.append("(d.rel_path = %s OR left(d.rel_path, %s) = %s)")
            params.extend((folder, len(folder) + 1, folder + "/"))
    for key, value in only.facets:
        clauses.append(
            "EXISTS (SELECT 1 FROM facets x WHERE x.doc_id = d.id AND x.key = %s "
            "AND x.value = %s)"
        )
        params.extend((key, value))
    if only.except_doc is not None:
        clauses.append("d.id <> %s")
        params.append(only.except_doc)
    return " AND ".join(clauses), params
