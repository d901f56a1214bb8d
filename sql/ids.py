"""Ids derived from content, shared by the write side (which mints them) and the read side (which
names a reading by its version): the same inputs give the same id in every process and run."""

from __future__ import annotations

import uuid

# A fixed namespace: IDs must come out the same in every process and on every run.
NAMESPACE = uuid.UUID("5b0f4a3e-6c1d-4e0a-9a5e-2f8d7c6b1a90")


def child_id(version_id: str, kind: str, ord_: int) -> str:
    """IDs of sections and chunks (and a version's representation): fixed by their version and
    position."""
    return str(uuid.uuid5(NAMESPACE, f"{kind}\x00{version_id}\x00{ord_}"))
