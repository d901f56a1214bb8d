"""Memory held by an import while it runs, sampled every few seconds (`run_child(memory=True)`).

Each process is read by its PSS: its private pages, and each shared page divided among the
processes that map it. Ray's workers all map its object store and PostgreSQL's backends its
cache, so RSS would count those pages once for every process. Processes are grouped by what they
are (`cpu_use.import_component`), and the machine's memory in use (total less available) is
read against what it was before the import started.
"""

from __future__ import annotations

from typing import Any

import psutil

from jobs.bench import cpu_use

MIB = 2**20


def pss(process: psutil.Process) -> int:
    """Bytes; the RSS where the kernel gives no `smaps_rollup` (not Linux, or not ours to read)."""
    try:
        with open(f"/proc/{process.pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return process.memory_info().rss


def in_use() -> int:
    memory = psutil.virtual_memory()
    return memory.total - memory.available


class TreeMemory:
    """The peaks of process trees' memory over a run: the machine's memory in use above idle, each
    component's sum, and each process's own (with the title it had then: a Ray worker's names the
    stage it ran)."""

    def __init__(self) -> None:
        self._idle = in_use()
        self.peak_in_use, self.peak_at = 0, 0.0
        self._components: dict[str, int] = {}
        self._processes: dict[tuple[int, float], tuple[int, str]] = {}
        self.series: list[tuple[float, int]] = []   # (seconds, in use above idle)

    def sample(self, at: float, *roots: psutil.Process, names: dict[int, str] | None = None) -> None:
        sums: dict[str, int] = {}
        for root, process in cpu_use.tree(*roots):
            try:
                label, held = cpu_use.import_component(process, root, names or {}), pss(process)
                key, title = (process.pid, process.create_time()), " ".join(process.cmdline())[:48]
            except psutil.Error:
                continue
            sums[label] = sums.get(label, 0) + held
            if held > self._processes.get(key, (0, ""))[0]:
                self._processes[key] = (held, title or process.name())
        used = in_use() - self._idle
        self.series.append((round(at, 1), used // MIB))
        if used > self.peak_in_use:
            self.peak_in_use, self.peak_at = used, at
        for label, held in sums.items():
            self._components[label] = max(self._components.get(label, 0), held)

    def summary(self, processes: int = 6) -> dict[str, Any]:
        """MiB: the peak in use above idle and when, each component's peak, the largest processes."""
        return {"peak_in_use_mib": self.peak_in_use // MIB, "peak_at_seconds": round(self.peak_at, 1),
                "by_component_mib": {k: v // MIB for k, v in sorted(self._components.items(), key=lambda kv: -kv[1])},
                "largest_processes_mib": [(title, held // MIB) for held, title in
                                          sorted(self._processes.values(), reverse=True)[:processes]],
                "series_mib": self.series}
