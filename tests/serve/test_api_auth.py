"""Credentials and scopes of the read API, and its error bodies, in process (no Ray)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from fastapi.testclient import TestClient

from serve import auth
from serve.app import build_app
from serve.replica import DeploymentInfo, open_pools
from tests.support.apps import no_embedder

pytestmark = pytest.mark.integration


def test_credentials_and_scopes(api):
    assert api.get("/healthz").status_code == 200                   # never needs a credential
    assert api.get("/deployment").json() == {"detail": auth.MISSING}
    assert api.get("/deployment", headers={"Authorization": "Bearer nope"}).json() == {"detail": auth.REFUSED}
    read, ingest, write = ({"Authorization": f"Bearer {s}"} for s in ("r-secret", "i-secret", "w-secret"))
    assert api.get("/deployment", headers=read).status_code == 200
    denied = api.get("/deployment", headers=ingest)
    assert (denied.status_code, denied.json()) == (403, {"detail": auth.NARROW})
    # a read credential cannot ingest or delete; unknown paths need write
    assert api.post("/ingest?filename=a.md&mime=text/markdown", content=b"x", headers=read).status_code == 403
    assert api.delete("/documents/00000000-0000-0000-0000-000000000001", headers=read).status_code == 403
    assert api.get("/no/such/route").status_code == 401
    gone = api.delete("/documents/00000000-0000-0000-0000-000000000001", headers=write)
    assert (gone.status_code, gone.json()) == (404, {"detail": "document_not_found"})


def test_ingest_limits_and_errors(api):
    write = {"Authorization": "Bearer w-secret"}
    big = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"x" * 2048, headers=write)
    assert (big.status_code, big.json()) == (413, {"detail": "body_too_large"})
    empty = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"", headers=write)
    assert (empty.status_code, empty.json()) == (422, {"detail": "empty_body"})
    half = api.post("/ingest?filename=a.md&mime=text/markdown&source_kind=notes", content=b"x", headers=write)
    assert half.status_code == 422 and set(half.json()) == {"detail"}
    ok = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"# A\n\nRavi leads billing.\n", headers=write)
    assert ok.status_code == 200 and ok.json()["created"] is True
    again = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"# A\n\nRavi leads billing.\n", headers=write)
    assert again.json()["created"] is False and again.json()["version_id"] == ok.json()["version_id"]


def test_operation_arguments_are_checked_first(api):
    read = {"Authorization": "Bearer r-secret"}
    unknown = api.post("/operations/facts_context", json={"query": "x", "limit": 3}, headers=read)
    assert unknown.json() == {"detail": {"code": "invalid_parameter", "message": "unknown argument(s): limit"}}
    missing = api.post("/operations/facts_context", json={}, headers=read)
    assert missing.json() == {"detail": {"code": "invalid_parameter", "message": "query"}}
    bound = api.post("/operations/facts_context", json={"query": "x", "k": 31}, headers=read)
    assert bound.json()["detail"]["message"] == "k violates maximum=30"
    flag = api.post("/operations/facts_context", json={"query": "x", "k": True}, headers=read)
    assert flag.json()["detail"]["message"].startswith("invalid k")
    assert api.post("/operations/nope", json={}, headers=read).status_code == 404
    hashed = hashlib.sha256(b"r-secret").hexdigest()
    assert auth.parse_tokens(None, None) == {} and hashed in auth.parse_tokens("read:r-secret", None)


# --- signed bearer tokens (JWTs) ----------------------------------------------------------------

HS_KEY = "a-shared-signing-key-of-at-least-32-bytes"


@pytest.fixture(scope="module")
def rsa_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(private_key) -> str:
    from cryptography.hazmat.primitives import serialization

    return private_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def _claims(scope: str | list[str] | None = "read", **changes) -> dict:
    now = int(time.time())
    claims = {"sub": "alice", "iat": now, "exp": now + 300, **({"scope": scope} if scope is not None else {})}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(claims: dict, header: dict, key: bytes | None = None) -> str:
    """A token put together by hand: `alg: none`, or HS256 keyed with whatever bytes `key` holds
    (PyJWT refuses to sign with a PEM key, which is the point)."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = b"" if key is None else hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def signed_api(memory, rsa_key):
    from sql.store import authority as store

    with store.connect(memory.dsn) as conn:
        store.migrate(conn)
    hashes = auth.parse_tokens("write:w-secret", None)
    pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)
    info = DeploymentInfo("00000000-0000-0000-0000-0000000000aa", "test", "all-MiniLM-L6-v2",
                          memory.object_store_uri, 1024, tuple(hashes.items()),
                          signed_tokens=auth.signed_tokens(hs256_key=HS_KEY, public_key=_pem(rsa_key)))
    with TestClient(build_app(pools, info, no_embedder)) as client:
        yield client


def test_signed_tokens_carry_their_scope_beside_shared_secrets(signed_api, rsa_key):
    api = signed_api
    read = _bearer(jwt.encode(_claims("read"), HS_KEY, algorithm="HS256"))
    assert api.get("/deployment", headers=read).status_code == 200
    denied = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"x", headers=read)
    assert (denied.status_code, denied.json()) == (403, {"detail": auth.NARROW})

    ingest = _bearer(jwt.encode(_claims("ingest"), rsa_key, algorithm="RS256"))
    assert api.post("/ingest?filename=a.md&mime=text/markdown", content=b"# A\n", headers=ingest).status_code == 200
    assert api.get("/deployment", headers=ingest).json() == {"detail": auth.NARROW}

    write = _bearer(jwt.encode(_claims(["write"]), rsa_key, algorithm="RS256"))
    gone = api.delete("/documents/00000000-0000-0000-0000-000000000001", headers=write)
    assert (gone.status_code, gone.json()) == (404, {"detail": "document_not_found"})
    # an OAuth-style scope string may name other services' scopes too; a prefix marks a key for scanners
    mixed = jwt.encode(_claims("openid profile read"), HS_KEY, algorithm="HS256")
    assert api.get("/deployment", headers=_bearer(mixed)).status_code == 200
    assert api.get("/deployment", headers=_bearer(f"cm_{mixed}")).status_code == 200
    # the shared secret keeps working beside them, and a stale-but-within-leeway token is accepted
    assert api.get("/deployment", headers=_bearer("w-secret")).status_code == 200
    late = jwt.encode(_claims("read", exp=int(time.time()) - 10), HS_KEY, algorithm="HS256")
    assert api.get("/deployment", headers=_bearer(late)).status_code == 200


def test_signed_token_refusals_say_why(signed_api, rsa_key):
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    api = signed_api
    now = int(time.time())
    other_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    refused = {
        "the token has expired": jwt.encode(_claims(exp=now - 120), HS_KEY, algorithm="HS256"),
        "the token is not valid yet": jwt.encode(_claims(nbf=now + 600), HS_KEY, algorithm="HS256"),
        "the signature does not verify": jwt.encode(_claims(), "another-key-that-is-32-bytes-long!", algorithm="HS256"),
        "the token has no 'exp' claim": jwt.encode(_claims(exp=None), rsa_key, algorithm="RS256"),
        "the token has no 'scope' claim": jwt.encode(_claims(None), rsa_key, algorithm="RS256"),
        "scope 'read ingest' needs 'write' to name both": jwt.encode(_claims("read ingest"), HS_KEY, algorithm="HS256"),
        "the scope claim must be a string or a list of strings": jwt.encode(_claims({"read": True}), HS_KEY,
                                                                            algorithm="HS256"),
        "the token names an audience and this deployment accepts none": jwt.encode(_claims(aud="other-api"), HS_KEY,
                                                                                   algorithm="HS256"),
        "algorithm 'none' is not accepted": _unsigned(_claims("write"), {"alg": "none", "typ": "JWT"}),
        "algorithm 'RS512' is not accepted": jwt.encode(_claims(), rsa_key, algorithm="RS512"),
        "algorithm '\\u20ac' is not accepted": _unsigned(_claims(), {"alg": "\u20ac"}),
        "algorithm 'ES256' is not accepted": jwt.encode(_claims(), ec.generate_private_key(ec.SECP256R1()),
                                                        algorithm="ES256"),
        "the token is not a well-formed JWT": "eyJhbGci.e30.c2ln",   # its header is cut short
        "the token's header names no algorithm": _unsigned(_claims(), {"typ": "JWT"}, HS_KEY.encode()),
    }
    for reason, token in refused.items():
        got = api.get("/deployment", headers=_bearer(token))
        assert (got.status_code, got.json()) == (401, {"detail": f"{auth.REFUSED}: {reason}"}), reason
        assert got.headers["www-authenticate"].startswith('Bearer error="invalid_token"'), reason
    # another key pair's RS256 signature, and HS256 keyed with the public key's text (algorithm confusion)
    for token in (jwt.encode(_claims("write"), other_rsa, algorithm="RS256"),
                  _unsigned(_claims("write"), {"alg": "HS256", "typ": "JWT"}, _pem(rsa_key).encode())):
        got = api.get("/deployment", headers=_bearer(token))
        assert got.json() == {"detail": f"{auth.REFUSED}: the signature does not verify"}
    # a valid token whose scope names nothing of ours may call nothing
    nothing = _bearer(jwt.encode(_claims("openid"), HS_KEY, algorithm="HS256"))
    assert api.get("/deployment", headers=nothing).json() == {"detail": auth.NARROW}
    assert api.post("/ingest?filename=a.md&mime=text/markdown", content=b"x", headers=nothing).status_code == 403
    # a secret that is no JWT and no shared secret gets the seed's plain refusal
    assert api.get("/deployment", headers=_bearer("nope")).json() == {"detail": auth.REFUSED}


def test_keys_are_pinned_to_their_algorithm(rsa_key, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    # a public key alone: HS256 keyed with its text is refused before any signature is checked
    only_rsa = auth.signed_tokens(public_key=_pem(rsa_key)).verifier()
    forged = _unsigned(_claims("write"), {"alg": "HS256", "typ": "JWT"}, _pem(rsa_key).encode())
    with pytest.raises(auth.TokenRefused, match="algorithm 'HS256' is not accepted"):
        only_rsa.verify(forged)
    assert only_rsa.verify(jwt.encode(_claims("write"), rsa_key, algorithm="RS256")).scope == "write"
    with pytest.raises(auth.TokenRefused, match="algorithm 'PS256' is not accepted"):
        only_rsa.verify(jwt.encode(_claims(), rsa_key, algorithm="PS256"))

    ec_key, ed_key = ec.generate_private_key(ec.SECP256R1()), ed25519.Ed25519PrivateKey.generate()
    path = tmp_path / "es256.pem"
    path.write_text(_pem(ec_key))
    es256 = auth.signed_tokens(public_key=str(path)).verifier()   # a path works as well as the text
    grant = es256.verify(jwt.encode(_claims("ingest", sub="loader"), ec_key, algorithm="ES256"))
    assert grant.scope == "ingest" and grant.caller.startswith("token:")
    for alg, key in (("RS256", rsa_key), ("EdDSA", ed_key)):
        with pytest.raises(auth.TokenRefused, match=f"algorithm '{alg}' is not accepted"):
            es256.verify(jwt.encode(_claims(), key, algorithm=alg))
    eddsa = auth.signed_tokens(public_key=_pem(ed_key)).verifier()
    assert eddsa.verify(jwt.encode(_claims("read"), ed_key, algorithm="EdDSA")).scope == "read"

    # issuer and audience, when configured, are required and compared exactly
    pinned = auth.signed_tokens(hs256_key=HS_KEY, issuer="https://issuer.example.com", audience="corpusmem").verifier()
    good = _claims(iss="https://issuer.example.com", aud="corpusmem")
    assert pinned.verify(jwt.encode(good, HS_KEY, algorithm="HS256")).scope == "read"
    for bad, reason in (({**good, "aud": "other"}, "the token is for another audience"),
                        ({**good, "iss": "https://evil.example.com"}, "the token is from another issuer"),
                        ({k: v for k, v in good.items() if k != "aud"}, "the token has no 'aud' claim")):
        with pytest.raises(auth.TokenRefused, match=reason):
            pinned.verify(jwt.encode(bad, HS_KEY, algorithm="HS256"))

    # what the deployment is given is checked when the settings are read
    private_pem = rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()).decode()
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    for kwargs, message in (
            ({"hs256_key": "short"}, "CORPUSMEM_API_JWT_HS256_KEY must be at least 32 bytes"),
            ({"hs256_key": _pem(rsa_key)}, "CORPUSMEM_API_JWT_HS256_KEY must not be a public key"),
            ({"public_key": private_pem}, "CORPUSMEM_API_JWT_PUBLIC_KEY holds a private key"),
            ({"public_key": str(tmp_path / "missing.pem")}, "CORPUSMEM_API_JWT_PUBLIC_KEY"),
            ({"public_key": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}, "not a PEM public key"),
            ({"public_key": _pem(weak)}, "RSA keys need at least 2048 bits"),
            ({"audience": "corpusmem"}, "need CORPUSMEM_API_JWT_HS256_KEY or CORPUSMEM_API_JWT_PUBLIC_KEY")):
        with pytest.raises(auth.CredentialError, match=message):
            auth.signed_tokens(**kwargs)
    assert not auth.signed_tokens().enabled
