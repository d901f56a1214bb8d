"""Admission limits of the read API: requests per minute and requests in flight, per credential
and per deployment, as the seed's self-hosted perimeter (optional, off by default).

The counting is `sql.admission`'s, the controller the query space's statements use too. Each
limit is active only when positive; rates refill continuously with a burst of a quarter of the
per-minute rate. A credential counts against its own limits and the deployment's; an open
deployment (no credentials) only against the deployment's. Refusals are `429` with whole-second
`Retry-After` and a `{code, message}` body.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import JSONResponse

from serve.auth import OPEN
from serve.middleware import Call
from sql import admission

# How the read API names a refusal: (code, message) by the limit that refused.
_REFUSALS: dict[admission.Reason, tuple[str, str]] = {
    "in_flight": ("concurrency_limited", "too many requests in flight; retry after Retry-After seconds"),
    "rate": ("rate_limited", "request rate limit reached; retry after Retry-After seconds"),
}


@dataclass(frozen=True)
class Limits:
    key_per_minute: int = 0
    key_in_flight: int = 0
    deployment_per_minute: int = 0
    deployment_in_flight: int = 0

    @property
    def active(self) -> bool:
        return any(v > 0 for v in (self.key_per_minute, self.key_in_flight, self.deployment_per_minute,
                                   self.deployment_in_flight))

    def policy(self) -> admission.Policy:
        return admission.Policy(caller_in_flight=self.key_in_flight, deployment_in_flight=self.deployment_in_flight,
                                caller_per_minute=self.key_per_minute,
                                deployment_per_minute=self.deployment_per_minute)


def _refuse(refused: admission.NotAdmitted) -> JSONResponse:
    code, message = _REFUSALS[refused.reason]
    return JSONResponse({"detail": {"code": code, "message": message}}, status_code=429,
                        headers={"Retry-After": str(refused.retry_after)})


def middleware(limits: Limits):
    """Run by `serve.middleware.Around`. Counted after the credential check and before routing
    (unknown paths count); never on `GET /healthz`."""
    controller = admission.Admission(limits.policy())

    async def admit(request: Request, call: Call):
        if not limits.active or request.url.path == "/healthz":
            return await call()
        caller = getattr(request.state, "caller", OPEN)
        try:
            ticket = controller.enter(None if caller == OPEN else caller)
        except admission.NotAdmitted as refused:
            return _refuse(refused)
        try:
            return await call()
        finally:
            controller.leave(ticket)
    return admit
