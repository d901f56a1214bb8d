"""Bearer credentials, scopes and browser origins, as the seed's self-hosted perimeter.

Off unless credentials are configured; then every route but `GET /healthz` needs
`Authorization: Bearer <credential>`. A credential has one scope: `read` (every read route),
`ingest` (`POST /ingest` only) or `write` (everything). Two kinds of credential work side by side:

- shared secrets, kept only as SHA-256 hashes and compared in constant time;
- signed tokens (JWTs) carrying their scope and an expiry, verified with a shared HMAC key
  (HS256) or an issuer's public key (RS256, ES256/384/512 or EdDSA, by the key's type). Each key
  verifies exactly one algorithm, chosen by the deployment, never by the token: a token whose
  header names another (`none`, or HS256 keyed with the public key's text) is refused unread.

Bodies are the seed's exact strings; a signed token's refusal adds why after a colon, and in the
`WWW-Authenticate` header (RFC 6750).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from serve.middleware import Call

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

# Signed tokens are accepted with 30 seconds of clock skew on `exp`, `nbf` and `iat`, as the seed's.
LEEWAY_S = 30
# A JWT, bare or behind a letters-only prefix (`cm_eyJ…`) that lets secret scanners spot a leaked one.
_JWT = re.compile(r"(?:[A-Za-z]+_)?(eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)")
_HS256_MIN_BYTES = 32   # RFC 7518 3.2: a key at least as long as the hash
_RSA_MIN_BITS = 2048
_EC_ALGORITHMS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


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


class OriginError(ValueError):
    """CORPUSMEM_CORS_ORIGINS cannot be used; the message names the entry and why."""


# An origin exactly as a browser sends it: lower-case scheme and host, an optional port, no path.
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
                     r"(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)(?::(?P<port>[1-9][0-9]{0,4}))?")
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_DEFAULT_PORTS = {"https": "443", "http": "80"}


def parse_origins(origins: str | None) -> tuple[str, ...]:
    """The browser origins CORPUSMEM_CORS_ORIGINS allows (comma-separated; empty: none). Each
    must be an exact `https` origin, or `http` on this machine (`localhost`, `127.0.0.1`,
    `[::1]`), with any port but the scheme's default written out; no wildcard, path or user."""
    if origins is None or not origins.strip():
        return ()
    found = []
    for entry in origins.split(","):
        entry = entry.strip()
        match = _ORIGIN.fullmatch(entry)
        problem = (
            "an empty entry (a doubled or trailing comma)" if not entry
            else "not an origin: scheme://host[:port], lower case, nothing after it" if match is None
            else "http is allowed only for localhost, 127.0.0.1 and [::1]; use https"
            if match["scheme"] == "http" and match["host"] not in _LOCAL_HOSTS
            else "a port above 65535" if match["port"] and int(match["port"]) > 65535
            else f"the default port {match['port']} written out; leave it off"
            if match["port"] == _DEFAULT_PORTS[match["scheme"]] else None)
        if problem:
            raise OriginError(f"CORPUSMEM_CORS_ORIGINS entry {entry!r}: {problem}")
        found.append(entry)
    return tuple(dict.fromkeys(found))


# --- signed tokens ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SignedTokens:
    """What verifies signed bearer tokens: plain text, so it travels to every Serve replica;
    each builds its `TokenVerifier` from it. Made by `signed_tokens`, which checks it."""
    hs256_key: str | None = None
    public_key: str | None = None   # PEM text
    issuer: str | None = None
    audience: str | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.hs256_key or self.public_key)

    def verifier(self) -> TokenVerifier:
        return TokenVerifier(self)


def signed_tokens(hs256_key: str | None = None, public_key: str | None = None, issuer: str | None = None,
                  audience: str | None = None) -> SignedTokens:
    """From the CORPUSMEM_API_JWT_* settings: `public_key` is PEM text or the path of a PEM file.
    Raises CredentialError, naming the setting, for anything that cannot verify safely."""
    if public_key and "-----BEGIN" not in public_key:
        try:
            public_key = Path(public_key).expanduser().read_text(encoding="utf-8")
        except OSError as err:
            raise CredentialError(f"CORPUSMEM_API_JWT_PUBLIC_KEY: neither PEM text nor a readable file ({err})"
                                  ) from None
    config = SignedTokens(hs256_key or None, public_key.strip() if public_key else None, issuer or None,
                          audience or None)
    if not config.enabled and (issuer or audience):
        raise CredentialError("CORPUSMEM_API_JWT_ISSUER and CORPUSMEM_API_JWT_AUDIENCE need "
                              "CORPUSMEM_API_JWT_HS256_KEY or CORPUSMEM_API_JWT_PUBLIC_KEY")
    config.verifier()   # every check, once, where the settings are read
    return config


class TokenRefused(Exception):
    """A signed token that is not accepted; `reason` says why, for the caller."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Grant:
    scope: str | None   # None: a valid token naming none of our scopes may call nothing
    caller: str         # who admission limits count against: the token's issuer and subject


class TokenVerifier:
    """Verifies signed tokens against the configured keys, one algorithm per key."""

    def __init__(self, config: SignedTokens) -> None:
        self.config = config
        self.keys: dict[str, Any] = {}
        if config.hs256_key:
            key = config.hs256_key.encode()
            if len(key) < _HS256_MIN_BYTES:
                raise CredentialError(f"CORPUSMEM_API_JWT_HS256_KEY must be at least {_HS256_MIN_BYTES} bytes "
                                      f"(got {len(key)})")
            if b"-----BEGIN" in key or key.startswith((b"ssh-", b"ecdsa-")):
                # anyone holding the public key could then sign HS256 tokens with its text
                raise CredentialError("CORPUSMEM_API_JWT_HS256_KEY must not be a public key: it is a shared secret")
            self.keys["HS256"] = key
        if config.public_key:
            algorithm, key = _public_key(config.public_key)
            self.keys[algorithm] = key

    def verify(self, token: str) -> Grant:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRefused("the token is not a well-formed JWT") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str):
            raise TokenRefused("the token's header names no algorithm")
        key = self.keys.get(algorithm)
        if key is None:
            # ascii(): the caller's text goes back in a header, which must stay printable ASCII
            raise TokenRefused(f"algorithm {ascii(algorithm[:20])} is not accepted")
        required = ["exp", "scope"] + [c for c, v in (("iss", self.config.issuer), ("aud", self.config.audience)) if v]
        try:
            claims = jwt.decode(token, key, algorithms=[algorithm], issuer=self.config.issuer,
                                audience=self.config.audience, leeway=LEEWAY_S, options={"require": required})
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("the token is not valid yet") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("the signature does not verify") from None
        except jwt.MissingRequiredClaimError as err:
            raise TokenRefused(f"the token has no {err.claim!r} claim") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("the token names an audience and this deployment accepts none"
                               if self.config.audience is None else "the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("the token is from another issuer") from None
        except jwt.PyJWTError as err:
            raise TokenRefused(f"the token is invalid ({type(err).__name__})") from None
        subject = f"{claims.get('iss', '')}\x00{claims.get('sub', '')}" if claims.get("sub") else token
        return Grant(_scope(claims["scope"]), f"token:{hashlib.sha256(subject.encode()).hexdigest()[:16]}")


def _scope(claim: Any) -> str | None:
    """The one scope a token's `scope` claim grants: a space-separated string (RFC 8693) or a
    list; names of other services' scopes are ignored, `write` covers the rest, and `read` with
    `ingest` is refused (a credential has one scope, and `write` is the one that holds both)."""
    if isinstance(claim, str):
        names = claim.split()
    elif isinstance(claim, list) and all(isinstance(n, str) for n in claim):
        names = claim
    else:
        raise TokenRefused("the scope claim must be a string or a list of strings")
    ours = {n for n in names if n in SCOPES}
    if "write" in ours:
        return "write"
    if ours == {"read", "ingest"}:
        raise TokenRefused("scope 'read ingest' needs 'write' to name both")
    return next(iter(ours), None)


def _public_key(pem: str) -> tuple[str, Any]:
    """(the one algorithm it verifies, the key) for a PEM public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if "PRIVATE KEY" in pem:
        raise CredentialError("CORPUSMEM_API_JWT_PUBLIC_KEY holds a private key: give the public key only")
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as err:
        raise CredentialError(f"CORPUSMEM_API_JWT_PUBLIC_KEY is not a PEM public key ({err})") from None
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < _RSA_MIN_BITS:
            raise CredentialError(f"CORPUSMEM_API_JWT_PUBLIC_KEY: RSA keys need at least {_RSA_MIN_BITS} bits "
                                  f"(got {key.key_size})")
        return "RS256", key
    if isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name in _EC_ALGORITHMS:
        return _EC_ALGORITHMS[key.curve.name], key
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "EdDSA", key
    raise CredentialError(f"CORPUSMEM_API_JWT_PUBLIC_KEY: a {type(key).__name__} is not supported; use RSA, "
                          "EC P-256/P-384/P-521 or Ed25519")


# --- the check on every request ----------------------------------------------------------------


def _refused(reason: str | None = None) -> JSONResponse:
    if reason is None:
        return JSONResponse({"detail": REFUSED}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
    description = reason.replace('"', "'").replace("\\", "/")
    challenge = f'Bearer error="invalid_token", error_description="{description}"'
    return JSONResponse({"detail": f"{REFUSED}: {reason}"}, status_code=401, headers={"WWW-Authenticate": challenge})


def middleware(hashes: dict[str, str], tokens: SignedTokens | None = None):
    """The credential check, run by `serve.middleware.Around`. Sets `request.state.caller` (whom
    admission counts against) and `request.state.scope` (the credential's scope; `write` on an
    open deployment, whose every caller may do anything)."""
    verifier = tokens.verifier() if tokens is not None and tokens.enabled else None

    async def check(request: Request, call: Call):
        needed = required_scope(request.method, request.url.path)
        request.state.caller = OPEN  # who admission limits count against; a credential below
        request.state.scope = "write"
        if not (hashes or verifier) or needed is None:
            return await call()
        header = request.headers.get("authorization", "")
        kind, _, secret = header.partition(" ")
        secret = secret.strip()
        if not header:
            return JSONResponse({"detail": MISSING}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        if kind.lower() != "bearer":
            return _refused()
        digest = hashlib.sha256(secret.encode()).hexdigest()
        scope = next((s for h, s in hashes.items() if hmac.compare_digest(h, digest)), None)
        caller = f"credential:{digest[:16]}"
        if scope is None:
            jwt_form = _JWT.fullmatch(secret) if verifier is not None else None
            if jwt_form is None:
                return _refused()
            try:
                grant = verifier.verify(jwt_form[1])
            except TokenRefused as refusal:
                return _refused(refusal.reason)
            scope, caller = grant.scope, grant.caller
        if scope is None or not allowed(scope, needed):
            return JSONResponse({"detail": NARROW}, status_code=403)
        request.state.caller, request.state.scope = caller, scope
        return await call()
    return check
