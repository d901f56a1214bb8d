"""The README and docs/ keep up with the code: every setting is in docs/settings.md, every command
the README shows parses with the CLI or names a make target, its SQL passes the query space's
validator (or is refused as shown), its client calls are the ones the client test drives, and
every relative link and image resolves. No Ray and no database: tests/jobs/test_sql_cli.py runs the
README's `corpusmem sql` transcripts on the example memory."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from jobs.cli import build_parser
from jobs.settings import SETTINGS
from jobs.sql_cli import parameter
from sql.query_space.validator import validate
from sql.query_space.validator_parse import QueryRejected

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").glob("*.md"))

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
_COMMAND = re.compile(r"^(\$ )?([A-Z_][A-Z0-9_]*=\S+\s+)*(\.venv/bin/)?corpusmem\s")


def _blocks(text: str, *langs: str) -> list[str]:
    """The bodies of the fenced code blocks in `text` whose language is one of `langs`."""
    return [body for lang, body in _FENCE.findall(text) if lang in langs]


def _logical_lines(body: str) -> list[str]:
    """Lines with backslash continuations joined."""
    return body.replace("\\\n", " ").splitlines()


def _argv(line: str) -> list[str]:
    """A shell line as its program's argv: comments, a trailing `&` and leading VAR=value dropped."""
    # shlex expands nothing, so `\$1` (how a shell is told not to expand `$1`) is the `$1` it gives.
    words = shlex.split(line.replace("\\$", "$"), comments=True)
    while words and _ENV_ASSIGNMENT.match(words[0]):
        words.pop(0)
    return words[:-1] if words and words[-1] == "&" else words


def _readme_commands() -> list[list[str]]:
    """Every command the README shows: each line of its `sh` blocks, and each `$ ` line of its
    console transcripts (unlabelled blocks)."""
    lines = [line for body in _blocks(README, "sh") for line in _logical_lines(body)]
    lines += [line[2:] for body in _blocks(README, "") for line in _logical_lines(body) if line.startswith("$ ")]
    return [argv for argv in map(_argv, lines) if argv]


def _program(argv: list[str]) -> str:
    return argv[0].removeprefix(".venv/bin/")


def _transcripts() -> list[tuple[list[str], list[str]]]:
    """(argv, the lines shown after it) for each `$ corpusmem ...` line of the README."""
    shown = []
    for body in _blocks(README, ""):
        for part in re.split(r"^\$ ", body, flags=re.M)[1:]:
            command, *output = part.replace("\\\n", " ").splitlines()
            shown.append((_argv(command), [line for line in output if line.strip()]))
    return shown


# --- settings -------------------------------------------------------------------------------------


def test_the_settings_table_lists_every_setting_in_order_with_its_default():
    page = (ROOT / "docs" / "settings.md").read_text()
    rows = dict(re.findall(r"^\| `(CORPUSMEM_[A-Z0-9_]+)` \| ([^|]*) \|", page, re.M))
    assert list(rows) == [s.env for s in SETTINGS]
    # A default the code gives is the default the table shows; an unset one is described in words.
    wrong = {s.env: rows[s.env] for s in SETTINGS if s.default is not None and rows[s.env] != f"`{s.default}`"}
    assert wrong == {}


# --- the README's commands --------------------------------------------------------------------------


def test_the_readme_shows_the_two_commands_first():
    commands = [" ".join(argv) for argv in _readme_commands()]
    assert commands[:2] == ["make demo", "make test"]


def test_every_command_the_readme_shows_is_one_this_project_has():
    programs = {_program(argv) for argv in _readme_commands()}
    assert programs <= {"corpusmem", "make", "curl"}, programs


@pytest.mark.parametrize("argv", [a for a in _readme_commands() if _program(a) == "corpusmem"],
                         ids=lambda a: a[1])
def test_every_corpusmem_command_in_the_readme_parses(argv, capsys):
    try:
        args = build_parser().parse_args(argv[1:])
    except SystemExit:
        pytest.fail(f"`{shlex.join(argv)}` does not parse: {capsys.readouterr().err}")
    assert callable(args.func)


def _docs_examples() -> list[tuple[str, list[str]]]:
    """(page, argv) for every `corpusmem` example in docs/ (a synopsis, with `[...]`, `{...}` or
    `(... | ...)`, is not an example)."""
    examples = []
    for page in DOCS:
        for body in _blocks(page.read_text(), "sh", "bash", "console", ""):
            for line in _logical_lines(body):
                if not _COMMAND.match(line):
                    continue   # output, or code of another language
                argv = _argv(line.removeprefix("$ "))
                if not any(w[0] in "[{(" for w in argv):
                    examples.append((page.name, argv))
    return examples


@pytest.mark.parametrize(("page", "argv"), _docs_examples(), ids=lambda x: x if isinstance(x, str) else x[1])
def test_every_corpusmem_example_in_the_docs_parses(page, argv, capsys):
    try:
        build_parser().parse_args(argv[1:])
    except SystemExit:
        pytest.fail(f"{page}: `{shlex.join(argv)}` does not parse: {capsys.readouterr().err}")


def test_every_make_target_in_the_readme_exists_and_its_corpusmem_commands_parse(capsys):
    makefile = (ROOT / "Makefile").read_text()
    recipes = {m[0]: m[1] for m in re.findall(r"^([a-z][\w-]*):.*\n((?:\t.*\n)*)", makefile, re.M)}
    wanted = {argv[1] for argv in _readme_commands() if _program(argv) == "make"}
    assert wanted and wanted <= set(recipes)
    for target in wanted:
        for command in re.findall(r"/bin/corpusmem (.*)", recipes[target]):
            try:
                build_parser().parse_args(shlex.split(command))
            except SystemExit:
                pytest.fail(f"make {target}: `corpusmem {command}` does not parse: {capsys.readouterr().err}")


def _readme_statements() -> list[tuple[str, list[object], str | None]]:
    """(SQL, parameters, the code the README says it is refused with, or None) for every statement
    the README runs: `corpusmem sql` transcripts and the bodies it posts to `/query/sql`."""
    statements = []
    for argv, output in _transcripts():
        args = build_parser().parse_args(argv[1:])
        if args.command == "sql" and args.statement:
            refused = next((line.split(":")[1].strip() for line in output if line.startswith("rejected:")), None)
            statements.append((args.statement, [parameter(p) for p in args.param], refused))
    for argv in _readme_commands():
        if _program(argv) == "curl" and any(word.endswith("/query/sql") for word in argv):
            body = json.loads(argv[argv.index("-d") + 1])
            statements.append((body["sql"], body.get("parameters", []), None))
    return statements


def test_the_readme_sql_passes_the_validator_or_is_refused_as_shown():
    statements = _readme_statements()
    assert len(statements) >= 3 and any(code for _, _, code in statements)
    for sql, parameters, code in statements:
        if code is None:
            validate(sql, parameters)
        else:
            with pytest.raises(QueryRejected) as refused:
                validate(sql, parameters)
            assert refused.value.code == code


def test_the_readme_client_calls_are_the_ones_the_client_test_drives():
    """The README's `remember` example calls only methods that the client test runs against
    `corpusmem serve` with the real client."""
    [example] = [body for body in _blocks(README, "python") if "from remember import" in body]
    calls = set(re.findall(r"\bmemory\.(\w+)\(", example))
    [driver] = ROOT.glob("tests/**/remember_client.py")
    driven = set(re.findall(r"\bc\.(\w+)\(", driver.read_text()))
    assert calls and calls <= driven, calls - driven


# --- links ----------------------------------------------------------------------------------------


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    headings = re.findall(r"^#+ (.+)$", re.sub(_FENCE, "", path.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_relative_link_and_image_resolves(page):
    text = re.sub(_FENCE, "", page.read_text())
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(target)
    assert broken == []


_PROJECT_PATH = re.compile(r"`((?:jobs|serve|sql|actors|pipeline|tests|scripts|deploy|notebooks|examples)/[\w./-]*)"
                           r"(?:::(\w+))?`")


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_file_and_function_the_docs_name_exists(page):
    """A module that moves or a function that is renamed takes its mention in the docs with it."""
    gone = []
    for path, name in _PROJECT_PATH.findall(page.read_text()):
        named = ROOT / path.rstrip(".")
        if not named.exists():
            gone.append(path)
        elif name and not re.search(rf"^(async def|def|class) {name}\b|^{name} =", named.read_text(), re.M):
            gone.append(f"{path}::{name}")
    assert gone == []
