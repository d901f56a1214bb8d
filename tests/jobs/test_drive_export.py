"""A folder exported from Google Drive, with a Drive `files` resource beside each file, imports
as a drive: documents are the drive's file ids, versions its revisions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.memory import do_import, rows

pytestmark = pytest.mark.integration


def export_file(folder: Path, name: str, text: str, *, file_id: str, revision: str, modified: str) -> None:
    """One exported file and the Drive API v3 resource a drive export leaves beside it."""
    (folder / name).write_text(text)
    (folder / f"{name}.meta.json").write_text(json.dumps({
        "kind": "drive#file", "id": file_id, "name": name, "mimeType": "text/markdown",
        "modifiedTime": modified, "headRevisionId": revision, "version": "1"}))


def import_export(memory, folder: Path):
    report = do_import(memory, folder, source_kind="gdrive", modified_at_from="sidecar")
    assert report.counts["failed"] == 0, report.failures
    return report


def test_drive_export_reimport_versions_by_file_id_and_revision(memory, ray_local, tmp_path):
    export = tmp_path / "drive-export"
    export.mkdir()
    export_file(export, "billing.md", "# Billing\n\nRavi leads billing.\n",
                file_id="1BillingId", revision="0BrevBilling1", modified="2026-03-01T09:00:00.000Z")
    export_file(export, "roster.md", "# Roster\n\nDana is on call in March.\n",
                file_id="1RosterId", revision="0BrevRoster1", modified="2026-03-02T09:00:00.000Z")
    export_file(export, "travel.md", "# Travel\n\nThe offsite is in Lisbon.\n",
                file_id="1TravelId", revision="0BrevTravel1", modified="2026-03-03T09:00:00.000Z")
    first = import_export(memory, export)
    assert first.counts["new_versions"] == 3

    # One file edited in the drive (new bytes, new head revision), one renamed (same id and
    # bytes: its sidecar moves with it), one untouched.
    export_file(export, "billing.md", "# Billing\n\nDana leads billing since April.\n",
                file_id="1BillingId", revision="0BrevBilling2", modified="2026-04-01T10:30:00.250Z")
    (export / "roster.md").rename(export / "on-call roster.md")
    (export / "roster.md.meta.json").unlink()
    export_file(export, "on-call roster.md", "# Roster\n\nDana is on call in March.\n",
                file_id="1RosterId", revision="0BrevRoster1", modified="2026-03-05T12:00:00.000Z")
    second = import_export(memory, export)

    assert second.counts["new_versions"] == 1 and second.counts["unchanged"] == 2
    assert rows(memory, "SELECT source_kind, source_ref FROM documents ORDER BY source_ref") == [
        ("gdrive", "1BillingId"), ("gdrive", "1RosterId"), ("gdrive", "1TravelId")]
    assert rows(memory, "SELECT d.source_ref, v.seq, v.source_version_ref, v.source_modified_at FROM versions v"
                        " JOIN documents d USING (doc_id) ORDER BY d.source_ref, v.seq") == [
        ("1BillingId", 1, "0BrevBilling1", datetime(2026, 3, 1, 9, tzinfo=UTC)),
        ("1BillingId", 2, "0BrevBilling2", datetime(2026, 4, 1, 10, 30, 0, 250000, tzinfo=UTC)),
        ("1RosterId", 1, "0BrevRoster1", datetime(2026, 3, 2, 9, tzinfo=UTC)),
        ("1TravelId", 1, "0BrevTravel1", datetime(2026, 3, 3, 9, tzinfo=UTC)),
    ]
