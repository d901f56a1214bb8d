"""Source code as Markdown: definitions as sections, code fenced, docstrings and comments as prose.

The code itself is kept whole and verbatim in fenced blocks (searchable, and stating nothing:
fenced code gives no claims, `pipeline/claims/segment.py`); what the author wrote in words, the
docstrings and comments, is repeated before it as paragraphs, which is where claims come from.

Python is read with its own parser (`ast` for the definitions, `tokenize` for the comments): each
top-level function and class is a section, each method of a class a subsection, and the code
between definitions a section of its own. Other languages are lexed by Pygments, which knows
their comments and docstrings but not their definitions, so their code is cut at blank lines
before an unindented line, into blocks of about the chunk target.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from pipeline.documents.data import fence, paragraph

# A comment of fewer words is a marker (`# noqa`, `// TODO`, a separator), not something said.
COMMENT_MIN_WORDS = 3
_COMMENT_MARKS = re.compile(r"^\s*(?:#+|//+|/\*+|\*+/?|--|;+|%+|<!--|-->|\*/)\s?|\s*(?:\*+/|-->)\s*$")


@dataclass(frozen=True)
class _Span:
    heading: str
    level: int
    first: int   # 1-based lines, inclusive
    last: int
    docstring: str | None = None


def to_markdown(text: str, language: str, filename: str, target_chars: int) -> str:
    """`text`, source code in `language` (a Pygments alias), as Markdown."""
    lines = text.split("\n")
    if language == "python":
        spans = _python_spans(text, len(lines))
        comments = _python_comments(text)
    else:
        spans = _blank_line_spans(lines, target_chars)
        comments = _lexed_comments(text, language, filename)
    title = filename or language
    parts = [f"# {title}"]
    for span in spans:
        code = "\n".join(lines[span.first - 1:span.last]).strip("\n")
        if not code.strip():
            continue
        if span.heading:
            parts.append(f"{'#' * span.level} {span.heading}")
        if span.docstring and span.docstring.strip():
            parts.append(paragraph(span.docstring))
        said = [c for line, c in comments if span.first <= line <= span.last]
        parts.extend(paragraph(c) for c in _merge(said))
        parts.append(fence(code, language))
    return "\n\n".join(parts)


def _python_spans(text: str, line_count: int) -> list[_Span]:
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise ValueError(f"not valid Python: {err.msg} at line {err.lineno}") from None
    spans: list[_Span] = []
    cursor = 1
    module_doc = ast.get_docstring(tree, clean=True)

    def between(end: int) -> None:
        nonlocal cursor, module_doc
        if end >= cursor:
            spans.append(_Span(f"lines {cursor}–{end}" if spans or module_doc is None else "module",
                               2, cursor, end, module_doc if not spans else None))
            module_doc = None
        cursor = end + 1

    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        between(first - 1)
        last = node.end_lineno or node.lineno
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] \
            if isinstance(node, ast.ClassDef) else []
        head_last = (min([methods[0].lineno, *(d.lineno for d in methods[0].decorator_list)]) - 1
                     if methods else last)
        spans.append(_Span(f"{kind} {node.name}", 2, first, head_last, ast.get_docstring(node, clean=True)))
        for method in methods:
            start = min([method.lineno, *(d.lineno for d in method.decorator_list)])
            spans.append(_Span(f"def {node.name}.{method.name}", 3, start, method.end_lineno or method.lineno,
                               ast.get_docstring(method, clean=True)))
        if methods and (methods[-1].end_lineno or 0) < last:
            spans.append(_Span(f"class {node.name} (end)", 3, (methods[-1].end_lineno or 0) + 1, last))
        cursor = last + 1
    between(line_count)
    return spans


def _python_comments(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and not token.string.startswith("#!"):
                found.append((token.start[0], token.string.lstrip("#").strip()))
    except (tokenize.TokenError, SyntaxError):
        pass   # `ast` parsed it; a tokenizer quirk costs only the comments
    return found


def _lexed_comments(text: str, language: str, filename: str) -> list[tuple[int, str]]:
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
    from pygments.token import Comment, String
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        try:
            lexer = get_lexer_for_filename(filename)
        except ClassNotFound:
            return []
    found: list[tuple[int, str]] = []
    line = 1
    for kind, value in lexer.get_tokens(text):
        if (kind in Comment or kind in String.Doc) and kind not in Comment.Preproc and kind not in Comment.Hashbang:
            cleaned = "\n".join(_COMMENT_MARKS.sub("", part).strip() for part in value.split("\n")).strip()
            if cleaned:
                found.append((line, cleaned))
        line += value.count("\n")
    return found


def _merge(comments: list[str]) -> list[str]:
    """Runs of one-line comments into paragraphs; markers of too few words left out."""
    merged: list[str] = []
    run: list[str] = []
    for comment in comments + [""]:
        if comment and "\n" not in comment:
            run.append(comment)
            continue
        if run:
            merged.append(" ".join(run))
            run = []
        if comment:
            merged.append(comment)
    return [m for m in merged if len(m.split()) >= COMMENT_MIN_WORDS]


def _blank_line_spans(lines: list[str], target_chars: int) -> list[_Span]:
    """Blocks that start at an unindented line after a blank one, joined up to `target_chars`."""
    starts = [1] + [i + 1 for i in range(1, len(lines))
                    if not lines[i - 1].strip() and lines[i][:1] not in ("", " ", "\t", "}", ")", "]")]
    spans: list[_Span] = []
    for index, first in enumerate(starts):
        last = starts[index + 1] - 1 if index + 1 < len(starts) else len(lines)
        size = sum(len(line) + 1 for line in lines[first - 1:last])
        if spans and spans[-1].heading == "" and \
                sum(len(line) + 1 for line in lines[spans[-1].first - 1:spans[-1].last]) + size <= target_chars:
            spans[-1] = _Span("", 2, spans[-1].first, last)
        else:
            spans.append(_Span("", 2, first, last))
    return spans
