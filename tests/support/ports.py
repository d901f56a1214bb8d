"""Free TCP ports for servers the tests start."""

from __future__ import annotations

import random
import socket

# Below the kernel's ephemeral range (32768–60999 on Linux) and above the range Ray gives its
# workers (10002–19999 by default). A port the kernel hands out for `bind(0)` is never one of these,
# so a server a test names cannot collide with a port that Ray, or anything else, picks for itself:
# a `bind(0)` pick, closed again before the server starts, was once taken by a Ray component in
# between ("Ray component metrics_export is trying to use a port number … used by other components").
_RANGE = range(20000, 32768)
_handed_out: set[int] = set()   # a port named twice in one process before its server binds it


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now, outside every range ports are picked
    from on their own, and not handed out before by this process."""
    for port in random.sample(_RANGE, 200):
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free TCP port in {_RANGE.start}–{_RANGE.stop - 1}")
