"""The `openai` normalizer: `normalize_relations` through any OpenAI-compatible chat endpoint.

Same endpoint and settings as the `openai` extractor (`OpenAIExtractorConfig`): `vllm serve` on a
GPU box, or any hosted endpoint that honours JSON-schema response formats. Prompt, schema and
parsing are `pipeline/facts/normalize_llm.py`'s, shared with the `vllm` normalizer. Claims go at most
`MAX_CLAIMS_PER_CALL` to a call, and calls run in a bounded thread pool. A call the endpoint fails
transiently is retried by the import's `RetryPolicy` (`actors/retries.py`); one that fails every
attempt raises `GaveUp`, and the version's `normalize_relations` is `dead_letter` with the reason
(its claims stay unread, for the next facts phase or `corpusmem retry`). An answer that is refused,
malformed or not a chat completion costs its claims nothing but the model: they are read by the
rules normalizer, and the problems say why.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from actors.openai_extractor import BACKEND, ChatEndpoint, OpenAIExtractorConfig
from actors.retries import RetryPolicy
from pipeline.claims.extraction import CallCost
from pipeline.facts import normalize, normalize_llm
from pipeline.facts.normalize import Assertion


class OpenAINormalizer:
    """Claims → assertions over an OpenAI-compatible endpoint."""

    name = BACKEND

    def __init__(self, config: OpenAIExtractorConfig, batch_size: int = normalize_llm.MAX_CLAIMS_PER_CALL,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        self._endpoint = ChatEndpoint(config, retry)
        self._config = config
        self._batch_size = max(1, min(batch_size, normalize_llm.MAX_CLAIMS_PER_CALL))
        self.version = normalize_llm.version(config.model, BACKEND)
        self._format = {"type": "json_schema", "json_schema": {
            "name": normalize_llm.PROMPT_NAME, "strict": True, "schema": normalize_llm.load_schema()}}

    def normalize_claims(self, claims: list[dict], topic: str | None
                         ) -> tuple[list[list[Assertion]], CallCost | None, list[str]]:
        """Per claim its assertions, the calls' summed cost (None when no call was made), and the
        problems met: dropped entries and rules fallbacks, each with its cause. Raises `GaveUp`
        when a call failed transiently on every attempt."""
        groups = normalize_llm.batches(claims, self._batch_size)
        if not groups:
            return [], None, []

        def one(group: list[dict]) -> tuple[list[list[Assertion]], list[str], CallCost]:
            reply = self._endpoint.complete(normalize_llm.messages(group, topic), self._format)
            if reply.failure:
                found, problems = normalize_llm.fallback(group, topic, reply.failure)
            else:
                found, problems = normalize_llm.parse(group, topic, reply.text or "")
            return found, problems, reply.cost

        with ThreadPoolExecutor(max_workers=min(self._config.max_concurrency, len(groups))) as pool:
            done = list(pool.map(one, groups))     # results stay in input order
        assertions: list[list[Assertion]] = []
        problems: list[str] = []
        for n, (found, said, _) in enumerate(done):
            assertions += found
            offset = n * self._batch_size
            # labels restart at C1 in every call; name claims by their place in the whole list
            problems += [_relabel(p, offset) for p in said]
        costs = [cost for _, _, cost in done]
        total = CallCost(backend=BACKEND, model=self._config.model, calls=sum(c.calls for c in costs),
                         tokens_in=sum(c.tokens_in for c in costs), tokens_out=sum(c.tokens_out for c in costs),
                         device_seconds=sum(c.device_seconds for c in costs))
        return assertions, total, problems

    def normalize_version(self, claims: list[dict], assertion_id) -> tuple[list[dict], list[dict]]:
        """Assertion rows and mention rows for the claims of one version: the contract and row
        format of `pipeline.facts.normalize.normalize_version`, with the model reading each claim."""
        rows, mentions, _, _ = self.normalize_version_costed(claims, assertion_id)
        return rows, mentions

    def normalize_version_costed(self, claims: list[dict], assertion_id
                                 ) -> tuple[list[dict], list[dict], CallCost | None, list[str]]:
        """`normalize_version`, plus the calls' cost and the problems, for the cost ledger and the log."""
        if not claims:
            return [], [], None, []
        # Mirrors normalize.normalize_version: the same topic, then the same rows from the assertions.
        topic = normalize.version_topic(claims)
        found, cost, problems = self.normalize_claims(claims, topic)
        rows, mentions = normalize.version_rows(list(zip(claims, found, strict=True)), assertion_id,
                                                    self.version)
        return rows, mentions, cost, problems


def _relabel(problem: str, offset: int) -> str:
    """"C3: ..." of a later call as the claim's label in the whole list."""
    if offset and problem.startswith("C"):
        head, sep, rest = problem.partition(":")
        if sep and head[1:].isdigit():
            return f"C{int(head[1:]) + offset}:{rest}"
    return problem
