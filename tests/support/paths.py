"""Where the tests find the repository, its example corpus and their fixture files."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "team"
FIXTURES = ROOT / "tests" / "fixtures"
SUPPORT = ROOT / "tests" / "support"


# A tmpfs, where the machine has one with room for the session's databases: measured over a whole
# run, /dev/shm held 2.6 GB at most, with 14.5 GB of memory left.
_MEMORY_DISK = Path("/dev/shm")
_MEMORY_DISK_ROOM = 6 * 2**30


def database_temp() -> Path | None:
    """Where the suite's PostgreSQL keeps its data: a tmpfs where there is one with room, since its
    data is deleted at the end anyway. Measured on a virtual disk mounted with `discard`: 150
    `CREATE DATABASE … TEMPLATE` clones in a row took 57–62 s there against 5 s on /dev/shm, and
    the server's stop and the folder's deletion at the end of the suite 11.3 s against 1.8 s.
    None (the system's temp folder) where there is no room."""
    try:
        room = shutil.disk_usage(_MEMORY_DISK).free
    except OSError:
        return None
    return _MEMORY_DISK if room >= _MEMORY_DISK_ROOM else None
