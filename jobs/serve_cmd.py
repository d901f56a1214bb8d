"""`corpusmem serve`: the read API on Ray Serve, over the embedded PostgreSQL or CORPUSMEM_DSN."""

from __future__ import annotations

import argparse
import os
import sys
import threading

from jobs import runtime, shutdown
from jobs.settings import Settings, SettingsError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000, the remember client's default)")


def start(settings: Settings, host: str, port: int) -> str:
    """Start the application; return its base URL. Ray stays up until the process ends."""
    import ray
    from ray import serve

    from actors.embedder import model_dimension
    from serve import admission, auth
    from serve.deployment import APP_NAME, application, direct_ingress_env, serve_env
    from serve.replica import DeploymentInfo
    from sql.store import authority as store
    from sql.write import reconcile

    # checked first, so a key or an origin that cannot be used stops the server before it serves
    try:
        credentials = auth.parse_tokens(settings.api_tokens, settings.api_tokens_file)
        tokens = auth.signed_tokens(settings.api_jwt_hs256_key, settings.api_jwt_public_key,
                                    settings.api_jwt_issuer, settings.api_jwt_audience)
        origins = auth.parse_origins(settings.cors_origins)
    except (auth.CredentialError, auth.OriginError) as err:
        raise SettingsError(f"invalid setting: {err}") from None
    _check_port_free(host, port)
    # read by Serve's processes in the Ray this process starts
    for name, value in serve_env().items():
        os.environ.setdefault(name, value)
    # One replica on a Ray this call starts answers on `port` itself. A cluster's Ray, or one this
    # process started before (the demo's import), was started without these settings, and several
    # replicas need one address in front of them: there Serve's proxy takes `port`.
    direct = direct_ingress_env(port) if settings.serve_replicas == 1 and not ray.is_initialized() and \
        os.environ.get("RAY_ADDRESS") in (None, "", "local") else {}
    os.environ.update(direct)   # the raylet this process starts passes them to Serve's processes
    try:
        resources = runtime.init_ray(quiet=True, job_name="corpusmem serve", serves=True,
                                     dashboard=settings.ray_dashboard)
    finally:
        for name in direct:
            del os.environ[name]
    if not runtime.started_ray():
        direct = {}   # it joined a Ray that `ray start` left running
    runtime.check_shared(settings)
    model = runtime.embedding_model(settings, store.resolve_dsn(settings), gpu=resources.get("GPU", 0) >= 1)
    authority = store.open_store(settings, embedding_model=model.pin, embedding_dim=model_dimension(model),
                                 build_revision=runtime.build_revision())
    with store.connect(authority.dsn, autocommit=True) as conn:
        # what a reconcile interrupted elsewhere left (a crash after its events were recorded) is
        # finished before the first read
        reconcile.reconcile_facts(conn, None)
    # while Serve starts: the first questions then read PostgreSQL's cache, not the kernel's
    if settings.serve_cache_share > 0:
        threading.Thread(target=_warm_cache, args=(authority.dsn, settings.serve_cache_share), name="cache warming",
                         daemon=True).start()
    info = DeploymentInfo(authority.deployment.deployment_id, authority.deployment.build_revision, model.pin,
                          settings.object_store_uri, settings.max_file_bytes, tuple(sorted(credentials.items())),
                          admission.Limits(settings.admission_key_per_minute, settings.admission_key_in_flight,
                                           settings.admission_deployment_per_minute,
                                           settings.admission_deployment_in_flight),
                          signed_tokens=tokens, cors_origins=origins,
                          trusted_principal_source=settings.trusted_principal_source)
    if host not in ("127.0.0.1", "localhost", "::1") and not (credentials or tokens.enabled):
        print(f"warning: serving {host} without credentials: anyone who can reach it can read and change "
              "the memory (set CORPUSMEM_API_TOKENS or CORPUSMEM_API_JWT_*)", file=sys.stderr)
    # with the replica on `port`, Serve's proxy, which nobody calls, takes another
    serve.start(http_options={"host": host, "port": runtime.free_port() if direct else port})
    # a GPU holds the questions' model in the embedder deployment; on CPUs each replica holds it
    gpu = resources.get("GPU", 0) >= 1 and settings.embedding_device in ("auto", "cuda")
    device = "cuda" if model.execution == "torch" and (gpu or settings.embedding_device == "cuda") else "cpu"
    serve.run(application(dsn=authority.dsn, info=info, model=model, device=device, replicas=settings.serve_replicas,
                          pools={"general": settings.pool_general, "retrieval": settings.pool_retrieval,
                                 "graph": settings.pool_graph}),
              name=APP_NAME, route_prefix="/")
    return f"http://{host}:{port}"


def _warm_cache(dsn: str, share: float) -> None:
    """Load the read path into `share` of PostgreSQL's cache (`authority.warm_cache`); a server
    that cannot still serves, from a cold cache."""
    import time

    import psycopg

    from sql.store import authority as store

    began = time.perf_counter()
    try:
        with store.connect(dsn, autocommit=True) as conn:
            relations, loaded = store.warm_cache(conn, share)
    except (psycopg.Error, store.StoreError) as err:
        print(f"warning: PostgreSQL's cache was not warmed ({err}); the first reads are slower", file=sys.stderr)
        return
    if relations:
        print(f"PostgreSQL's cache holds the read path: {relations} relations, {loaded >> 20} MiB in "
              f"{time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port something already listens on, before Ray starts: Serve would only log
    that it cannot bind it, and retry, while the command waited."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            raise SettingsError(f"cannot serve on {host}:{port}: {err.strerror} (is another server on it? "
                                "--port picks another)") from None


def main(settings: Settings, args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM, then stop within `shutdown.GRACE_S`: the commands that
    joined the local Ray this process started, the processor, Serve, that Ray, its hold on the
    embedded PostgreSQL. Exit 0 on such a stop; a signal that comes while it is still starting
    ends it with 128 + the signal; the end of that Ray's raylet stops it with exit 1.

    What still calls into Ray when it shuts down (the processor in a micro-batch, Serve stopping
    on a cluster) would make Ray end the process on the spot, so past their share of the time
    the stop is forced instead."""
    from jobs import process

    stopping = shutdown.install(interrupt=True)
    try:
        url = start(settings, args.host, args.port)
        shutdown.install(interrupt=False)  # serving: a signal now only ends the wait below
        print(f"corpusmem read API at {url} (OpenAPI at {url}/openapi.json); Ctrl-C stops it", flush=True)
        if dashboard := runtime.dashboard_text(runtime.job_info()):
            print(f"Ray dashboard at {dashboard}", flush=True)
        processor = threading.Thread(target=process.drain, args=(settings, stopping), name="processor",
                                     daemon=True)
        processor.start()
        # Serve replaces a proxy or a replica that ends, and the requests are answered without a GCS
        # (tests/jobs/test_shutdown.py): only a raylet that ends stops the server
        started_ray = runtime.started_ray()
        runtime.watch_ray(stopping, gcs=False)
        shutdown.wait()
        if started_ray:
            # the commands that joined this Ray stop as after a Ctrl-C, while it and the database are still there
            runtime.interrupt_joined(timeout=shutdown.remaining() / 2)
        # A micro-batch the processor is in ends while Ray and the database are still there.
        processor.join(timeout=shutdown.remaining() / 2)
        if processor.is_alive():
            shutdown.end_now("the processor is still in a micro-batch")
        if not started_ray and not _stop_serve():
            shutdown.end_now("Serve is still stopping on the cluster")
    finally:
        shutdown.finish()
    return 0


def _stop_serve() -> bool:
    """Take the application and Serve's controller off a cluster this process only joined, where
    they would outlive it (on a local Ray, stopping Ray stops them); whether that finished in
    time, leaving a second or two for the rest."""
    from ray import serve

    stopper = threading.Thread(target=serve.shutdown, name="serve-shutdown", daemon=True)
    stopper.start()
    stopper.join(timeout=max(0.0, shutdown.remaining() - 2.0))
    return not stopper.is_alive()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m jobs.serve_cmd")
    add_arguments(parser)
    sys.exit(main(runtime.settings(), parser.parse_args()))
