"""What a user sees of a successful import is the progress, the run report and corpusmem's own
notes: no ERROR or WARNING line from Ray, ONNX Runtime or anything else, on a first run too."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT

# An alarming line: a level word, a C++ log line of Ray's ("[2026-12-02 17:12:40,289 E 3301 3301]"),
# a line forwarded from a Ray process ("(raylet) ...") or a traceback.
_ALARM = re.compile(r"\b(ERROR|WARNING|Warning|Error)\b|^\[[\d\- :,]+ [EW] \d+ \d+\]|^\(\w+(?: pid=\d+)?\)|Traceback")


def test_the_demo_on_a_first_run_prints_no_error_or_warning_and_asks_its_read_api_over_http(memory, tmp_path):
    """`make demo` end to end, as from a fresh shell and on a first run (no model cache yet: the
    first import builds it): the import starts a Ray of its own, the read API then served on that
    Ray answers on the port the demo asks (the replica's own port needs settings the import's Ray
    was started without: there Serve's proxy takes the port), and nothing prints an alarm."""
    from jobs import runtime

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CORPUSMEM_"))}
    env.update(CORPUSMEM_DSN=memory.dsn, CORPUSMEM_OBJECT_STORE=memory.object_store_uri,
               CORPUSMEM_HOME=str(memory.home), CORPUSMEM_MODEL_CACHE=str(tmp_path / "models"))
    port = runtime.free_port()
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "demo", "--port", str(port)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=420)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "new versions     11" in done.stdout
    asked = done.stdout.split(f"the read API is up at http://127.0.0.1:{port}; asking it over HTTP:")[1]
    assert "Dana leads billing migration" in asked and "GET /resolve?name=Dana: Dana (T0)" in asked, asked
    alarms = [line for line in (done.stdout + done.stderr).splitlines() if _ALARM.search(line)]
    assert not alarms, "\n".join(alarms)
