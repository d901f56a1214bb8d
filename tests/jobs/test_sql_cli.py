"""`corpusmem sql` on the example memory: each `$ corpusmem sql ...` transcript of the README exits
as shown and prints the lines it shows (the rows of an answer, or the code of a refusal)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from jobs import cli
from jobs.settings import Settings

pytestmark = pytest.mark.integration

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _transcripts() -> list[tuple[list[str], list[str]]]:
    """(argv, the non-blank lines shown after it) for each `$ corpusmem sql ...` line of the README's
    console transcripts (its unlabelled code blocks)."""
    shown = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", README, re.M | re.S):
        if lang:
            continue
        for part in re.split(r"^\$ ", body, flags=re.M)[1:]:
            command, *output = part.splitlines()
            # shlex expands nothing, so `\$1` (how a shell is told not to expand `$1`) is the `$1` it gives.
            argv = shlex.split(command.replace("\\$", "$"))
            if argv[:2] == ["corpusmem", "sql"]:
                shown.append((argv[1:], [line for line in output if line.strip()]))
    return shown


def _squeezed(line: str) -> str:
    return " ".join(line.split())


def test_the_readme_sql_transcripts_answer_as_shown(example_memory: Settings, monkeypatch, capsys):
    for env, value in (("CORPUSMEM_DSN", example_memory.dsn), ("CORPUSMEM_HOME", str(example_memory.home)),
                       ("CORPUSMEM_OBJECT_STORE", example_memory.object_store_uri)):
        monkeypatch.setenv(env, value)
    transcripts = _transcripts()
    assert len(transcripts) >= 2
    for argv, output in transcripts:
        capsys.readouterr()
        status = cli.main(argv)
        out, err = capsys.readouterr()
        refused = [line.split("(exit status")[0] for line in output if line.startswith("rejected:")]
        assert status == (2 if refused else 0), err
        printed = {_squeezed(line) for line in (out + err).splitlines()}
        missing = [line for line in refused or output if _squeezed(line) not in printed]
        assert missing == [], f"corpusmem {shlex.join(argv)} printed:\n{out}{err}"
