"""Threads that look at this machine's vLLM engine processes while a test's import runs: which
ran (`EngineWatch`), and one killed at a chosen moment (`EngineKiller`). A process is an engine as
the engine watch of the project decides it (`actors.engine_watch.is_engine`)."""

from __future__ import annotations

import threading

import psutil

from actors.engine_watch import is_engine


def running_engines() -> list[psutil.Process]:
    return [p for p in psutil.process_iter() if is_engine(p)]


class EngineLooks:
    """Calls `look` every `LOOK_S` on a thread while the `with` block runs, until it returns True."""

    LOOK_S = 0.5

    def __init__(self) -> None:
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(self.LOOK_S):
            if self.look():
                return

    def look(self) -> bool:
        raise NotImplementedError


class EngineWatch(EngineLooks):
    """The vLLM engine processes seen running while it watches."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[int] = set()

    def look(self) -> bool:
        self.seen |= {p.pid for p in running_engines()}
        return False


class EngineKiller(EngineLooks):
    """Kills the first vLLM engine process once it has been busy for `busy_s` on end after it sat
    idle for 2 s. Measured here, an engine's start is one busy second (its imports), about 8 s
    idle (waiting for its client), then under a second of profiling and warm-up; generating a
    batch keeps it busy for seconds. So `busy_s` 0 kills it while it starts, 1.5 while it
    generates."""

    LOOK_S, IDLE_S = 0.3, 2.0

    def __init__(self, busy_s: float) -> None:
        super().__init__()
        self.busy_s = busy_s
        self.killed: int | None = None
        self._engine: psutil.Process | None = None
        self._last = self._idle_for = self._busy_for = 0.0

    def look(self) -> bool:
        try:
            if self._engine is None:
                self._engine = next(iter(running_engines()), None)
                self._last = sum(self._engine.cpu_times()[:2]) if self._engine else 0.0
                self._idle_for = self._busy_for = 0.0
                return False
            used = sum(self._engine.cpu_times()[:2])
            busy, self._last = used - self._last > self.LOOK_S / 2, used   # over half a core since the last look
            if not busy:
                self._idle_for, self._busy_for = self._idle_for + self.LOOK_S, 0.0
            elif self._idle_for >= self.IDLE_S:
                self._busy_for += self.LOOK_S
                if self._busy_for >= self.busy_s:
                    self._engine.kill()
                    self.killed = self._engine.pid
                    return True
        except psutil.Error:
            self._engine = None   # it ended on its own (a restart): watch the next one
        return False
