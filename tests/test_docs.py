"""The README keeps up with the code: every setting is documented, and the quick start is there."""

from __future__ import annotations

from pathlib import Path

from jobs.settings import SETTINGS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_setting_is_in_the_readme_table():
    missing = [s.env for s in SETTINGS if f"| `{s.env}` |" not in README]
    assert missing == []


def test_readme_quick_start_shows_the_two_commands():
    assert "make demo" in README and "make test" in README
