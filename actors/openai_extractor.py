"""The `openai` extractor: Selection and Claimify through any OpenAI-compatible chat endpoint.

Meant for `vllm serve` on a GPU box (or any hosted endpoint that honours JSON-schema response
formats). Prompts, schemas and parsing are `pipeline/claims/llm_io.py`'s, shared with the `vllm` backend.
Calls run in a bounded thread pool. A call the endpoint fails transiently (unreachable, timed out,
408/409/429/5xx) is retried by the import's `RetryPolicy` (`actors/retries.py`, the writer's own
rule); one that fails every attempt raises `GaveUp`, and the batch's versions are `dead_letter` at
`extract_claims` with the reason, for `corpusmem retry`. An answer that is refused, empty or not a
chat completion costs its chunk's statements, never the batch: Selection keeps them flagged,
Claimify omits them, each with the cause.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from actors.retries import RetryPolicy, describe, with_retries
from pipeline.claims import llm_io
from pipeline.claims.extraction import (
    CallCost,
    ChunkContext,
    ClaimifyResult,
    SelectionResult,
)

BACKEND = "openai"
_CAUSE_MAX = 300


class OpenAIExtractorConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(description="The endpoint's base URL including `/v1`, e.g. `http://gpu-box:8000/v1` "
                                      "for `vllm serve`.")
    model: str = Field(min_length=1, description="The model name the endpoint serves; part of the extractor "
                                                 "version, so changing it re-extracts.")
    api_key: str = Field(default="EMPTY", description="Bearer key; `vllm serve` without `--api-key` accepts any "
                                                      "value.")
    max_concurrency: int = Field(default=8, ge=1, le=1024,
                                 description="Requests in flight at once. Higher keeps a batching server busy; "
                                             "past its `max_num_seqs` requests only queue.")
    timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout. A long Claimify answer at "
                                                              "low throughput needs minutes; a dead server should "
                                                              "not hold a batch longer than this times the "
                                                              "attempts (CORPUSMEM_RETRY_ATTEMPTS).")
    max_tokens: int = Field(default=2048, ge=16, description="Output cap per call. Too low truncates answers "
                                                             "(the cut statements are omitted); too high lets a "
                                                             "looping model burn time.")
    temperature: float = Field(default=0.0, ge=0, le=2,
                               description="0 keeps the same chunk giving the same claims, as the determinism "
                                           "invariant wants; raise only to experiment.")


@dataclass(frozen=True)
class _Reply:
    text: str | None
    cost: CallCost
    failure: str | None     # why there is no usable text


class EndpointUnavailable(Exception):
    """The endpoint failed in a way another attempt may get through: unreachable, timed out, or
    answered 408, 409, 429 or 5xx."""


# Answers worth another attempt: timeout, conflict, rate limit, and the server's own errors.
_RETRIED_STATUS = (408, 409, 429)


class ChatEndpoint:
    """One JSON-schema-bound chat completion at a time, shared by the extractor and the normalizer.

    A call the endpoint fails transiently gets the `retry` policy's attempts with its backoff (the
    SDK's own retries are off, so there is one rule and one budget) and then raises `GaveUp`
    naming the endpoint. A call that is refused, comes back empty, or fails for good (a 400, a
    body that is not a chat completion) is a `_Reply` with the cause."""

    def __init__(self, config: OpenAIExtractorConfig, retry: RetryPolicy = RetryPolicy()) -> None:
        import openai

        self._client = openai.OpenAI(base_url=config.base_url, api_key=config.api_key,
                                     timeout=config.timeout_s, max_retries=0)
        self._call_errors = (openai.OpenAIError, ValueError, TypeError, AttributeError, IndexError, KeyError)
        self._config = config
        self._retry = retry

    def complete(self, messages: list[dict[str, str]], response_format: dict[str, Any]) -> _Reply:
        started = time.perf_counter()
        request = {"model": self._config.model, "messages": messages, "response_format": response_format,
                   "max_tokens": self._config.max_tokens, "temperature": self._config.temperature}
        try:
            response = with_retries(self._retry, lambda: self._create(request), lambda err: None,
                                    transient=lambda err: isinstance(err, EndpointUnavailable))
            choice = response.choices[0]
            usage = response.usage
            text = choice.message.content
            refusal = getattr(choice.message, "refusal", None)
        # The batch never fails on one call: what the SDK raises after its retries, and what a body
        # that is not a chat completion raises when read, become the cause recorded against the
        # statements or claims of that call.
        except self._call_errors as error:
            return _Reply(None, self._cost(started, None), _cause(f"transport error: {type(error).__name__}: {error}"))
        cost = self._cost(started, usage)
        if refusal:
            return _Reply(None, cost, _cause(f"the model refused: {refusal}"))
        if text is None:
            return _Reply(None, cost, "empty output")
        # A cut answer (finish_reason "length") is read by the parser, which keeps what was complete.
        return _Reply(text, cost, None)

    def _create(self, request: dict[str, Any]) -> Any:
        import openai

        try:
            return self._client.chat.completions.create(**request)
        except openai.APIConnectionError as err:    # unreachable or timed out
            raise EndpointUnavailable(f"{self._config.base_url}: {describe(err)}") from err
        except openai.APIStatusError as err:
            if err.status_code in _RETRIED_STATUS or err.status_code >= 500:
                raise EndpointUnavailable(f"{self._config.base_url}: {describe(err)}") from err
            raise

    def _cost(self, started: float, usage: Any) -> CallCost:
        return CallCost(backend=BACKEND, model=self._config.model, calls=1,
                        tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
                        tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
                        device_seconds=time.perf_counter() - started)


class OpenAIExtractor:
    """The Extractor protocol over an OpenAI-compatible endpoint."""

    name = BACKEND

    def __init__(self, config: OpenAIExtractorConfig, retry: RetryPolicy = RetryPolicy()) -> None:
        self._endpoint = ChatEndpoint(config, retry)
        self._config = config
        self.version = f"openai-1:{config.model}:{llm_io.prompt_hash()}"
        self._formats = {name: {"type": "json_schema",
                                "json_schema": {"name": name, "strict": True, "schema": llm_io.load_schema(name)}}
                         for name in llm_io.PROMPT_NAMES}

    def select(self, chunks: list[ChunkContext]) -> tuple[list[SelectionResult], list[CallCost]]:
        def one(ctx: ChunkContext) -> tuple[SelectionResult, CallCost | None]:
            if not ctx.target:
                return SelectionResult(()), None
            reply = self._endpoint.complete(llm_io.selection_messages(ctx), self._formats["selection"])
            if reply.failure:
                return llm_io.selection_fallback(ctx, reply.failure), reply.cost
            return llm_io.parse_selection(ctx, reply.text or ""), reply.cost

        return self._map(one, chunks)

    def claimify(self, chunks: list[ChunkContext], selections: list[SelectionResult]
                 ) -> tuple[list[ClaimifyResult], list[CallCost]]:
        if len(chunks) != len(selections):
            raise ValueError(f"claimify got {len(chunks)} chunks and {len(selections)} selections")

        def one(pair: tuple[ChunkContext, SelectionResult]) -> tuple[ClaimifyResult, CallCost | None]:
            ctx, selection = pair
            if not llm_io.kept_labels(selection):
                return ClaimifyResult(()), None     # nothing kept: no call, no cost
            reply = self._endpoint.complete(llm_io.claimify_messages(ctx, selection), self._formats["claimify"])
            if reply.failure:
                return llm_io.claimify_fallback(selection, reply.failure), reply.cost
            return llm_io.parse_claimify(ctx, selection, reply.text or ""), reply.cost

        return self._map(one, list(zip(chunks, selections, strict=True)))

    def _map(self, fn: Callable[[Any], tuple[Any, CallCost | None]], items: list) -> tuple[list, list[CallCost]]:
        if not items:
            return [], []
        with ThreadPoolExecutor(max_workers=min(self._config.max_concurrency, len(items))) as pool:
            done = list(pool.map(fn, items))     # results stay in input order
        return [result for result, _ in done], [cost for _, cost in done if cost is not None]


def _cause(text: str) -> str:
    return " ".join(text.split())[:_CAUSE_MAX]
