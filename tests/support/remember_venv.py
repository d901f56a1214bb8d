"""The real `remember` 0.17.2 client, run against a served memory from its own venv.

The client needs Python 3.12 or later: the session makes its own venv from a 3.12 interpreter
(`$(pyenv root)/versions/3.12.*`, else `python3.12` on PATH) and installs `remember==0.17.2` from
PyPI. Without such an interpreter the test fails with a clear message; it never skips.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _which(name: str) -> bool:
    return any(os.access(os.path.join(p, name), os.X_OK) for p in os.environ.get("PATH", "").split(os.pathsep))


def python312() -> str:
    """An interpreter of Python 3.12 or later; fails the test when there is none."""
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() \
        if _which("pyenv") else str(Path.home() / ".pyenv")
    for candidate in sorted(glob.glob(f"{root}/versions/3.1[2-9]*/bin/python3"), reverse=True) + ["python3.12"]:
        try:
            out = subprocess.run([candidate, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.stdout.strip() == "True":
            return candidate
    pytest.fail("the remember client needs Python >= 3.12 and none was found (looked in "
                f"{root}/versions/3.12.* and for python3.12 on PATH); install one, e.g. `pyenv install 3.12`")


def make_venv(venv: Path) -> str:
    """A venv at `venv` with `remember==0.17.2` installed; its python. With uv (the dev extra
    installs it) in a few seconds; else with the venv's own pip (about 15 s more)."""
    uv = Path(sys.executable).parent / "uv"
    python = str(venv / "bin" / "python")
    if uv.is_file():
        subprocess.run([str(uv), "venv", "--quiet", "--python", python312(), str(venv)], check=True, timeout=120)
        subprocess.run([str(uv), "pip", "install", "--quiet", "--python", python, "remember==0.17.2"], check=True,
                       timeout=600)
    else:
        subprocess.run([python312(), "-m", "venv", str(venv)], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "remember==0.17.2"], check=True, timeout=600)
    return python


def run(python: str, args: list[str], config_dir: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python ARGS...` with the client's configuration in `config_dir` (no stored credentials, no
    REMEMBER_* variable of the caller's environment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEMBER_")}
    env["REMEMBER_CONFIG_DIR"] = str(config_dir)
    return subprocess.run([python, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)
