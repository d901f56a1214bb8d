"""The read API's app in process (FastAPI's TestClient, no Ray Serve) over a test's memory."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi.testclient import TestClient

from jobs.settings import Settings
from serve import admission
from serve.app import build_app
from serve.replica import DeploymentInfo, Embed, open_pools


async def no_embedder(_text: str, _pin: str | None = None) -> list[float]:
    """The embedder of an app whose tests never embed a question."""
    raise RuntimeError("no embedder in this test")


def client(settings: Settings, embed: Embed, limits: admission.Limits = admission.Limits()) -> Iterator[TestClient]:
    """The app over `settings` with `embed` for questions, open for the block (a fixture's body)."""
    pools = open_pools(settings.dsn, general=2, retrieval=2, graph=1)
    info = DeploymentInfo("00000000-0000-0000-0000-0000000000bb", "test", "all-MiniLM-L6-v2",
                          settings.object_store_uri, 1 << 20, (), limits)
    with TestClient(build_app(pools, info, embed)) as test_client:   # the app opens and closes the pools
        yield test_client
