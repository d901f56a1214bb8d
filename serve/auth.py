"""Bearer credentials and scopes, as the seed's self-hosted perimeter.

Off unless credentials are configured; then every route but `GET /healthz` needs
`Authorization: Bearer <secret>`. A credential has one scope: `read` (every read route),
`ingest` (`POST /ingest` only) or `write` (everything). Secrets are kept only as SHA-256 hashes,
compared in constant time. Bodies are the seed's exact strings.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from fastapi import Request
from fastapi.responses import JSONResponse

SCOPES = ("read", "ingest", "write")
MISSING = "a perimeter credential is required"
REFUSED = "perimeter authentication failed"
NARROW = "credential may not perform this operation"
OPEN = "open"  # the caller of a deployment without credentials

# Routes that change memory; every other known route only reads.
_INGEST = {("POST", "/ingest")}
_WRITE_PREFIXES = (("DELETE", "/documents/"),)
_READ_PREFIXES = ("/operations", "/resolve", "/lookup/", "/hydrate/", "/transcript/", "/search/", "/chunks/",
                  "/graph/", "/readiness", "/documents", "/deployment", "/openapi.json", "/query/")


class CredentialError(ValueError):
    """A credential setting cannot be read; the message says which and why."""


def parse_tokens(tokens: str | None, tokens_file: str | None) -> dict[str, str]:
    """{sha256 hex of the secret: scope} from `scope:secret,...` and from a file of
    `scope sha256hex` lines (blank lines and # comments ignored)."""
    found: dict[str, str] = {}
    for entry in (tokens or "").split(","):
        if not entry.strip():
            continue
        scope, _, secret = entry.strip().partition(":")
        if scope not in SCOPES or not secret:
            raise CredentialError(f"CORPUSMEM_API_TOKENS entries are scope:secret with scope one of {SCOPES}")
        found[hashlib.sha256(secret.encode()).hexdigest()] = scope
    if tokens_file:
        for n, line in enumerate(Path(tokens_file).read_text(encoding="utf-8").splitlines(), start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or parts[0] not in SCOPES or len(parts[1]) != 64:
                raise CredentialError(f"{tokens_file}:{n}: expected `scope sha256hex` with scope one of {SCOPES}")
            found[parts[1].lower()] = parts[0]
    return found


def required_scope(method: str, path: str) -> str | None:
    """None: no credential needed; else the narrowest scope that may call the route."""
    if path == "/healthz":
        return None
    if (method, path) in _INGEST:
        return "ingest"
    if any(method == m and path.startswith(p) for m, p in _WRITE_PREFIXES):
        return "write"
    if path.startswith(_READ_PREFIXES):
        return "read"
    return "write"


def allowed(scope: str, needed: str) -> bool:
    return scope == "write" or scope == needed


def middleware(hashes: dict[str, str]):
    async def check(request: Request, call_next):
        needed = required_scope(request.method, request.url.path)
        request.state.caller = OPEN  # who admission limits count against; a credential below
        if not hashes or needed is None:
            return await call_next(request)
        header = request.headers.get("authorization", "")
        kind, _, secret = header.partition(" ")
        if not header:
            return JSONResponse({"detail": MISSING}, status_code=401)
        digest = hashlib.sha256(secret.strip().encode()).hexdigest()
        scope = next((s for h, s in hashes.items() if hmac.compare_digest(h, digest)), None)
        if kind.lower() != "bearer" or scope is None:
            return JSONResponse({"detail": REFUSED}, status_code=401)
        if not allowed(scope, needed):
            return JSONResponse({"detail": NARROW}, status_code=403)
        request.state.caller = f"credential:{digest[:16]}"
        return await call_next(request)
    return check
