"""What the tests see of vLLM's engine processes."""

from __future__ import annotations

import threading

import psutil


class EngineWatch:
    """The vLLM engine-core processes seen running while it watches."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "EngineWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._done.wait(0.5):
            for proc in psutil.process_iter(["name", "cmdline"]):
                if "EngineCore" in (proc.info["name"] or "") or "EngineCore" in " ".join(proc.info["cmdline"] or ()):
                    self.seen.add(proc.pid)
