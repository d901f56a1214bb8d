"""The Ray dashboard a user is pointed at opens: `corpusmem serve` and an import print where it is
and the command that gives its token, an import joins the Ray a running server holds, and the
dashboard's jobs API, asked with that token, lists both jobs by name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.memory import write
from tests.support.paths import ROOT
from tests.support.waiting import wait_for

_DASHBOARD = re.compile(r"dashboard (?:at )?(http://\S+) \(its token: `ray get-auth-token`\)")


def test_an_import_joins_the_served_ray_and_the_dashboard_lists_both_named_jobs_to_its_token(
        served_log: Path, memory, tmp_path: Path):
    dashboard = wait_for(lambda: _DASHBOARD.search(served_log.read_text()), timeout=30,
                         what="the dashboard line of corpusmem serve").group(1)

    notes = write(tmp_path / "notes", {"cutover.md": "# Cutover\n\nDana moved the billing cutover to 14 April.\n"})
    # No RAY_ADDRESS: the import finds the Ray this user's server runs and joins it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(CORPUSMEM_DSN=memory.dsn, CORPUSMEM_OBJECT_STORE=memory.object_store_uri,
               CORPUSMEM_HOME=str(memory.home))
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "import", "--no-progress", str(notes)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ray: joined the Ray of the running `corpusmem serve` at " in done.stderr, done.stderr
    assert f"dashboard {dashboard} (its token: `ray get-auth-token`)" in done.stdout, done.stdout

    token = subprocess.run([str(Path(sys.executable).with_name("ray")), "get-auth-token"], capture_output=True,
                           text=True, timeout=60, check=True).stdout.strip()
    assert httpx.get(f"{dashboard}/api/jobs/", timeout=30).status_code in (401, 403)   # the locked door
    jobs = httpx.get(f"{dashboard}/api/jobs/", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert jobs.status_code == 200, jobs.text
    names = {(job.get("metadata") or {}).get("job_name") for job in jobs.json()}
    assert {"corpusmem serve", f"corpusmem import {notes}"} <= names, names
