"""Where the tests find the repository, its example corpus and their fixture files."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "team"
FIXTURES = ROOT / "tests" / "fixtures"
SUPPORT = ROOT / "tests" / "support"
