"""Free TCP ports for servers the tests start: the rule `corpusmem bench serve` names its server's
port by (`jobs.runtime.free_port`)."""

from __future__ import annotations

from jobs.runtime import free_port

__all__ = ["free_port"]
