"""Claims read from OCR'd pages cite their page and lines over HTTP, when the caller asks
(`Prefer: ocr-citations`), by the rule `corpusmem claims` uses; text that was not OCR'd cites
none; and unasked, the evidence keeps exactly the fields the real `remember` client accepts."""

from __future__ import annotations

import json
import subprocess

import pytest

from jobs.claims_cli import show_claims
from tests.support import apps
from tests.support.memory import do_import, new_memory, unique_name
from tests.support.ocr_pages import encode, render

pytestmark = pytest.mark.integration

PREFER = {"Prefer": "ocr-citations"}


@pytest.fixture(scope="module")
def scanned_memory(pg_admin_dsn, template_db, ray_local, tmp_path_factory):
    """A memory holding a two-page scan (TIFF) and a plain-text note, imported once for the
    module's tests, which only read it."""
    root = tmp_path_factory.mktemp("scanned")
    folder = root / "docs"
    folder.mkdir()
    (folder / "minutes.tiff").write_bytes(encode([render(["Grace Liu chairs the security council."]),
                                                  render(["Marco Rossi joined the platform team in 2023."])], "TIFF"))
    (folder / "note.txt").write_text("Ravi Kumar works on the cutover plan.\n")
    settings = new_memory(pg_admin_dsn, template_db, root, unique_name("cm_scanned"))
    assert do_import(settings, folder).status == "succeeded"
    return settings


@pytest.fixture(scope="module")
def scanned(scanned_memory):
    """The app over that memory."""
    yield from apps.client(scanned_memory, apps.no_embedder)


def _claims(api, query: str, headers: dict[str, str] | None = None, post: bool = False) -> list[dict]:
    body = {"query": query, "channel": "bm25", "k": 5}
    got = api.post("/search/claims", json=body, headers=headers) if post else \
        api.get("/search/claims", params=body, headers=headers)
    assert got.status_code == 200, got.text
    return got.json()["evidence"]


def test_an_ocr_claim_cites_its_page_and_line_when_asked_and_typed_text_cites_none(scanned, scanned_memory):
    for post in (False, True):
        [rossi] = _claims(scanned, "Rossi", PREFER, post)
        assert "Marco Rossi" in rossi["claim_text"]
        assert rossi["ocr_citation"] == {"page": 2, "first_line": 1, "last_line": 1}
        [ravi] = _claims(scanned, "cutover", PREFER, post)
        assert "Ravi Kumar" in ravi["claim_text"] and ravi["ocr_citation"] is None
    # among other preferences, in any case
    [rossi] = _claims(scanned, "Rossi", {"Prefer": "return=minimal, OCR-Citations"})
    assert rossi["ocr_citation"]["page"] == 2
    # the same rule as the CLI's
    assert "page 2, line 1 " in show_claims(scanned_memory, "minutes.tiff")


def test_unasked_the_evidence_keeps_the_fields_the_remember_client_accepts(scanned, remember_python, tmp_path):
    [rossi] = _claims(scanned, "Rossi")
    assert "ocr_citation" not in rossi
    check = ("import sys; from remember.models import Envelope; "
             "Envelope.model_validate_json(open(sys.argv[1]).read())")
    for name, headers in (("plain", None), ("asked", PREFER)):
        body = scanned.get("/search/claims", params={"query": "Rossi", "channel": "bm25"}, headers=headers).json()
        (tmp_path / f"{name}.json").write_text(json.dumps(body))
    plain = subprocess.run([remember_python, "-c", check, str(tmp_path / "plain.json")], capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    # which is why the citation is only sent when asked: the client refuses any key it does not know
    asked = subprocess.run([remember_python, "-c", check, str(tmp_path / "asked.json")], capture_output=True, text=True)
    assert asked.returncode != 0 and "ocr_citation" in asked.stderr, asked.stderr
