"""The Ray Serve application: the API ingress composed with a query-embedder deployment.

    Api (FastAPI ingress, replicas = CORPUSMEM_SERVE_REPLICAS) ──DeploymentHandle──► QueryEmbedder

The ingress builds its FastAPI app on each replica (`__serve_build_asgi_app__`), after opening
that replica's connection pools. The embedder holds the sentence-transformers model (on a GPU
when the cluster has one) and is the only model any read calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ray import serve
from ray.serve.handle import DeploymentHandle

from serve.app import DeploymentInfo, build_app, open_pools

APP_NAME = "corpusmem"


@serve.deployment(ray_actor_options={"num_cpus": 0.5})
class QueryEmbedder:
    def __init__(self, model_path: str, model_name: str, device: str) -> None:
        from actors.embedder import ModelRef, load_model

        self._model = load_model(ModelRef(model_name, model_path), device, threads=1)

    def embed(self, text: str) -> list[float]:
        return self._model.encode([text], normalize_embeddings=True, show_progress_bar=False)[0].tolist()


@serve.deployment(ray_actor_options={"num_cpus": 0.25})
@serve.ingress()
class Api:
    def __init__(self, embedder: DeploymentHandle, dsn: str, info: DeploymentInfo, pools: dict[str, int]) -> None:
        self._embedder = embedder
        self._dsn = dsn
        self._info = info
        self._pools = pools

    def _embed(self, text: str) -> np.ndarray:
        # Route handlers run in FastAPI's thread pool, where waiting on a handle is allowed.
        return np.asarray(self._embedder.embed.remote(text).result(timeout_s=30), dtype=np.float32)

    def __serve_build_asgi_app__(self) -> Any:
        return build_app(open_pools(self._dsn, **self._pools), self._info, self._embed)


def application(*, dsn: str, info: DeploymentInfo, model_path: str, model_name: str, device: str, replicas: int,
                pools: dict[str, int]) -> serve.Application:
    embedder = QueryEmbedder.bind(model_path, model_name, device)
    return Api.options(num_replicas=replicas).bind(embedder, dsn, info, pools)
