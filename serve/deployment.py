"""The Ray Serve application: the API ingress, which embeds questions itself on CPUs, or composed
with a query-embedder deployment that holds the model on a GPU.

    Api (FastAPI ingress, replicas = CORPUSMEM_SERVE_REPLICAS) [──DeploymentHandle──► QueryEmbedder]

The ingress builds its FastAPI app on each replica (`__serve_build_asgi_app__`) with that
replica's connection pools, which the app opens when it starts. On CPUs each replica holds the
pinned model (`ReplicaEmbedder`): a question is encoded at once on a thread of the replica, with
no hop to another process and no wait for company (the ONNX executions encode every text alone,
so a batch would save nothing). On a GPU the embedder deployment holds the model and encodes the
questions arriving together as one batch (`serve.batch`).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

import numpy as np
from ray import serve
from ray.serve.handle import DeploymentHandle

from serve.app import build_app
from serve.replica import DeploymentInfo, open_pools

APP_NAME = "corpusmem"
# Questions encoded together: how many at most, and how long the first waits for company. A lone
# question pays the wait (one encode on a CPU thread takes about 13 ms); under concurrent clients a
# batch of 8 costs a quarter of the CPU of 8 single encodes.
EMBED_BATCH = 16
EMBED_BATCH_WAIT_S = 0.010
API_ONGOING = 64
# Seconds between Serve's health checks of a replica (and, set by `corpusmem serve`, of its proxy):
# one that ended is replaced after three failed checks, 6 s at this period against Serve's 30 s.
HEALTH_CHECK_PERIOD_S = 2.0


def serve_env() -> dict[str, str]:
    """Serve's settings in a Ray that `corpusmem serve` starts, for a server that mostly waits.

    - The pace of Serve's background work: health checks of the proxy at the replicas' period,
      and the controller's loop and the cached metrics' export twice and once a second rather than
      ten times. Idle, on 2 cores, the controller spent 23.5 ms of CPU a second and the GCS 13.5
      answering it; at this pace 9.5 and 5.5, about 0.7 ms less a request at 38 requests a second.
      A replica that ends is still replaced after three failed checks (6 s), at most half a second
      later.
    - Serve's logs (a line a request) go to its own files under the session's `logs/serve/`, which
      the Ray dashboard shows, and not also to the workers' stderr: `corpusmem serve` never shows
      a worker's output (`runtime.init_ray(quiet=True)`), yet Ray's log monitor read every line
      back and sent it through the GCS, 0.6 ms of CPU a request on `bench serve` (log monitor 0.4
      → < 0.1, GCS 0.3–0.4 → 0.2).
    - The handlers run on the replica's own event loop, not on a second loop in a thread of their
      own that every request crossed to and back (as Serve's throughput-optimized settings do):
      the replica spent about 1 ms less a request in 9 of 10 alternated runs of 300 questions
      (facts_context 6.9–8.2 ms against 8.0–9.7). The handlers only await; what computes
      (encoding a question) runs in a thread pool, so the replica's own work is not held up."""
    return {"RAY_SERVE_PROXY_HEALTH_CHECK_PERIOD_S": str(HEALTH_CHECK_PERIOD_S),
            "RAY_SERVE_CONTROL_LOOP_INTERVAL_S": "0.5",
            "RAY_SERVE_METRICS_EXPORT_INTERVAL_MS": "1000",
            "RAY_SERVE_LOG_TO_STDERR": "0",
            "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0"}


def direct_ingress_env(port: int) -> dict[str, str]:
    """The environment under which a Ray started for one API replica has that replica serve HTTP
    on `port` itself (Serve's direct ingress), rather than behind Serve's proxy.

    The proxy's hop is most of a read's cost on a small machine: per request it spent 4.8 ms of CPU
    in the proxy and 3-4 ms more in the replica's and Ray's plumbing, against 2 ms for a whole
    resolve_entity served directly (docs/performance.md). Serve keeps a proxy on the head (on a port
    of its own) that nobody calls. A replaced replica takes the port again at once: the quarantine
    Serve keeps on a freed port is for an HAProxy in front, which this does not run."""
    return {"RAY_SERVE_ENABLE_DIRECT_INGRESS": "1",
            "RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT": str(port),
            "RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT": str(port + 1),   # a half-open range
            "RAY_SERVE_PORT_QUARANTINE_S": "0",
            # a local Ray stops with the server: there is no load balancer to drain from
            "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "0"}


# A replica accepts as many questions as one batch holds (Serve's default, 5, would cap batches).
@serve.deployment(ray_actor_options={"num_cpus": 0.5}, max_ongoing_requests=EMBED_BATCH,
                  health_check_period_s=HEALTH_CHECK_PERIOD_S)
class QueryEmbedder:
    def __init__(self, model, device: str) -> None:
        self._device = device
        self._hold(model)

    def _hold(self, model) -> None:
        from actors.embedder import load_model

        self._model, self._ref = load_model(model, self._device, threads=1), model

    @serve.batch(max_batch_size=EMBED_BATCH, batch_wait_timeout_s=EMBED_BATCH_WAIT_S)
    async def embed(self, texts: list[str], pins: list[str]) -> list[list[float]]:
        """Each question in the space of the pin it asks for: after `corpusmem reembed` switches
        the pin, the model of the new one is loaded in place of the old."""
        from actors.embedder import model_for_pin

        out: list[list[float]] = [[] for _ in texts]
        for pin in dict.fromkeys(pins):
            if pin != self._ref.pin:
                self._hold(model_for_pin(pin, gpu=self._device == "cuda", cache=self._ref.cache))
            asked = [i for i, p in enumerate(pins) if p == pin]
            # A question's vector must not depend on who else asked at the same moment.
            alone = 1 if not getattr(self._model, "batch_invariant", True) else len(asked)
            vectors = self._model.encode([texts[i] for i in asked], normalize_embeddings=True,
                                         show_progress_bar=False, batch_size=alone)
            for i, v in zip(asked, vectors):
                out[i] = v.tolist()
        return out


# Questions a replica remembers the vector of, by pin and text (an agent asks again and again).
QUESTIONS_KEPT = 4096


class ReplicaEmbedder:
    """A replica's own question embedder on CPUs: the model of the pin asked for, loaded in the
    replica; each question encoded on one of its threads (the event loop serves on meanwhile),
    and the vectors of the last `QUESTIONS_KEPT` questions remembered."""

    def __init__(self, model, threads: int = 2) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from actors.embedder import load_model

        self._ref, self._model = model, load_model(model, "cpu", threads=1)
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="question")
        self._kept: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    async def __call__(self, text: str, pin: str) -> np.ndarray:
        key = (pin, text)
        if (found := self._kept.get(key)) is not None:
            self._kept.move_to_end(key)
            return found
        vector = await asyncio.get_running_loop().run_in_executor(self._pool, self._encode, text, pin)
        self._kept[key] = vector
        while len(self._kept) > QUESTIONS_KEPT:
            self._kept.popitem(last=False)
        return vector

    def _encode(self, text: str, pin: str) -> np.ndarray:
        """After `corpusmem reembed` switched the pin, the model of the new one replaces the old."""
        from actors.embedder import load_model, model_for_pin

        if pin != self._ref.pin:
            ref = model_for_pin(pin, gpu=False, cache=self._ref.cache)
            self._ref, self._model = ref, load_model(ref, "cpu", threads=1)
        vector = self._model.encode([text], normalize_embeddings=True, show_progress_bar=False, batch_size=1)[0]
        return np.asarray(vector, dtype=np.float32)


# Handlers only await I/O (the embedder, PostgreSQL), so a replica takes many requests at once;
# the connection pools, not this, bound the work that reaches PostgreSQL.
@serve.deployment(ray_actor_options={"num_cpus": 0.25}, max_ongoing_requests=API_ONGOING,
                  health_check_period_s=HEALTH_CHECK_PERIOD_S)
@serve.ingress()
class Api:
    def __init__(self, embedder: DeploymentHandle | Any, dsn: str, info: DeploymentInfo,
                 pools: dict[str, int]) -> None:
        """`embedder`: the embedder deployment's handle (a GPU), or the model to embed with here."""
        self._embedder = embedder if isinstance(embedder, DeploymentHandle) else ReplicaEmbedder(embedder)
        self._dsn = dsn
        self._info = info
        self._pools = pools

    async def _embed(self, text: str, pin: str | None = None) -> np.ndarray:
        """`text`'s vector in the space of `pin` (None: the pin the server started with)."""
        pin = pin or self._info.embedding_model
        if isinstance(self._embedder, ReplicaEmbedder):
            return await asyncio.wait_for(self._embedder(text, pin), timeout=30)
        vector = await asyncio.wait_for(self._embedder.embed.remote(text, pin), timeout=30)
        return np.asarray(vector, dtype=np.float32)

    def __serve_build_asgi_app__(self) -> Any:
        return build_app(open_pools(self._dsn, **self._pools), self._info, self._embed)


def application(*, dsn: str, info: DeploymentInfo, model, device: str, replicas: int,
                pools: dict[str, int]) -> serve.Application:
    """On a GPU the questions go to the embedder deployment; on CPUs each replica embeds them."""
    embedder = QueryEmbedder.bind(model, device) if device == "cuda" else model
    return Api.options(num_replicas=replicas).bind(embedder, dsn, info, pools)
