"""Analysis of a memory, for Jupyter: pandas DataFrames of what was imported, what failed and why,
how facts changed over time, where sources disagree, which names are ambiguous, what it cost.

    from jobs import analysis
    memory = analysis.open()                 # CORPUSMEM_DSN, else CORPUSMEM_HOME's embedded memory
    memory.runs()                            # one row per import run
    memory.entity_facts("Ravi")              # an entity's facts with their windows and fates

Every frame is read through the `memory_v1` views (`sql/read/analysis_queries.py`), so what a
deleted document said is absent from all of them. `memory.sql(...)` runs a statement of the
query space through its validator and sandbox, as `corpusmem sql` does.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from actors.metrics import reason
from jobs import runtime
from jobs.settings import Settings
from pipeline.facts import names
from sql.read import analysis_queries as q

EXAMPLE_CORPUS = runtime.PROJECT_ROOT / "examples" / "team"


class AmbiguousEntity(LookupError):
    """A name that matches several entities (give the entity id instead), or none."""


def open(target: str | os.PathLike | None = None) -> "Memory":  # noqa: A001 (the analysis API's entry point)
    """The memory at `target`: a PostgreSQL DSN, or a `CORPUSMEM_HOME` folder (its embedded
    PostgreSQL). Without one, the memory the environment names (`CORPUSMEM_DSN`, then
    `CORPUSMEM_HOME`); when the environment names none and the default home holds nothing yet,
    the example corpus is imported into it first, so the notebooks work out of the box."""
    from sql.store import authority as store

    target = os.fspath(target) if target is not None else None
    if target and (target.startswith(("postgresql://", "postgres://")) or "=" in target):
        settings = runtime.settings(dsn=target)
    elif target:
        settings = runtime.settings(home=Path(target), dsn=None)
    else:
        settings = runtime.settings()
    memory = Memory(store.resolve_dsn(settings), settings)
    named = target or os.environ.get("CORPUSMEM_DSN") or os.environ.get("CORPUSMEM_HOME")
    if not named and memory.is_empty():
        memory.import_example()
    return memory


class Memory:
    """One memory, read on a connection per call (a notebook may sit idle for hours)."""

    def __init__(self, dsn: str, settings: Settings):
        self.dsn = dsn
        self.settings = settings

    def __repr__(self) -> str:
        from sql.store.authority import _redact

        return f"<corpusmem memory {_redact(self.dsn)}>"

    def _frame(self, query, *args: Any, **kwargs: Any) -> pd.DataFrame:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            columns, rows = query(conn, *args, **kwargs)
        return pd.DataFrame.from_records(rows, columns=columns)

    def is_empty(self) -> bool:
        from sql.store import authority as store

        return store.pinned_model(self.dsn) is None or self.documents().empty

    def import_example(self) -> None:
        """Import `examples/team` (what `make demo` imports) into this memory."""
        from jobs import import_corpus

        print(f"importing the example corpus ({EXAMPLE_CORPUS}) into {self!r} ...", file=sys.stderr)
        options = import_corpus.import_options(self.settings, (str(EXAMPLE_CORPUS),), progress=False,
                                               source={"modified_at_from": "path"})
        import_corpus.run_import(options, self.settings)

    # -- the import ----------------------------------------------------------------------

    def runs(self) -> pd.DataFrame:
        """Import runs: status, start, end, seconds and what they counted."""
        return self._frame(q.runs)

    def stage_seconds(self, run_id: str | None = None) -> pd.DataFrame:
        """Busy seconds per stage and run (summed over workers), and documents per busy second,
        stages in pipeline order."""
        from pipeline import records

        frame = self._frame(q.stage_seconds, run_id)
        order = {s: i for i, s in enumerate(records.STAGES)}
        frame["order"] = frame["stage"].map(lambda s: order.get(s, len(order)))
        return (frame.sort_values(["run_id", "order"], kind="stable", ignore_index=True).drop(columns="order")
                if len(frame) else frame.drop(columns="order"))

    def failures(self, run_id: str | None = None) -> pd.DataFrame:
        """Failed items with their stage, reason (the error's first part) and error."""
        frame = self._frame(q.failures, run_id)
        frame.insert(3, "reason", frame["error"].map(reason) if len(frame) else pd.Series(dtype=str))
        return frame

    def failure_reasons(self, run_id: str | None = None) -> pd.DataFrame:
        """Failures counted by stage and reason."""
        f = self.failures(run_id)
        return (f.groupby(["stage", "reason"]).size().rename("failures").reset_index()
                .sort_values(["failures", "stage"], ascending=[False, True], ignore_index=True))

    def costs(self) -> pd.DataFrame:
        """The cost ledger by stage, backend and model: calls, tokens and device seconds."""
        return self._frame(q.costs)

    # -- documents and claims ------------------------------------------------------------

    def documents(self) -> pd.DataFrame:
        """Live documents with their said-on date (`source_modified_at`), versions and claims."""
        return self._frame(q.documents)

    def documents_over_time(self, period: str = "M") -> pd.DataFrame:
        """Live documents counted per period of their said-on date (`period`: a pandas period
        alias, "M" months by default, "W", "D", "Q", "Y"); undated documents are left out."""
        d = self.documents().dropna(subset=["said_on"])
        said = pd.to_datetime(d["said_on"], utc=True).dt.tz_convert(None)
        counts = said.dt.to_period(period).value_counts().sort_index()
        return pd.DataFrame({"period": counts.index.to_timestamp(), "documents": counts.to_numpy()})

    def claims_per_document(self) -> pd.DataFrame:
        return self.documents()[["doc_id", "title", "said_on", "claims"]].sort_values(
            ["claims", "title"], ascending=[False, True], ignore_index=True)

    def drop_reasons(self) -> pd.DataFrame:
        """The extraction ledger of current versions counted by decision and reason: what the
        extractor left out of the claims, and why."""
        ledger = self._frame(q.ledger)
        return (ledger.groupby(["decision", "reason"]).size().rename("rows").reset_index()
                .sort_values(["rows", "decision"], ascending=[False, True], ignore_index=True))

    def single_source_claims(self) -> pd.DataFrame:
        """Live claims no other live document also says: what rests on one document only."""
        return self._frame(q.single_source_claims)

    # -- entities and facts --------------------------------------------------------------

    def entities(self, limit: int = 20) -> pd.DataFrame:
        """The live entities with the most facts about them."""
        return self._frame(q.busiest_entities, limit)

    def entity(self, name_or_id: str) -> tuple[str, str]:
        """(entity_id, canonical name) for a name or an id; a name that matches several entities
        or none raises `AmbiguousEntity` with the candidates."""
        found = self._frame(q.entities, names.key(name_or_id))
        if found.empty and _is_uuid(name_or_id):
            every = self._frame(q.entities_by_id, [name_or_id])
            if not every.empty:
                return every.iloc[0]["entity_id"], every.iloc[0]["canonical_name"]
        if len(found) != 1:
            listed = "; ".join(f"{r.canonical_name} ({r.entity_id})" for r in found.itertuples()) or "none"
            raise AmbiguousEntity(f"{name_or_id!r} names {len(found)} entities: {listed}")
        return found.iloc[0]["entity_id"], found.iloc[0]["canonical_name"]

    def entity_facts(self, name_or_id: str, now: datetime | None = None) -> pd.DataFrame:
        """Every visible fact about an entity with its world-time window and what became of it.
        `status`: `current` (held, true now), `past` or `future` (held, true at another time),
        `possible` (held, its window partly unknown) or `retracted` (its support withdrawn);
        `superseded`: a later fact closed its window (an `update` decision)."""
        entity_id, _ = self.entity(name_or_id)
        now = now or datetime.now(timezone.utc)
        f = self._frame(q.entity_facts, [entity_id])
        f["status"] = pd.Series([_status(r, now) for r in f.itertuples()], dtype=object)
        f["superseded"] = f["updated_at"].notna()
        return f

    def believed(self, on: datetime | str, about: datetime | str) -> pd.DataFrame:
        """What the memory believed on date `on` (its facts as ingested by then and not yet
        invalidated) about date `about` (true then by their windows; `match` says `possible`
        where a window is partly unknown)."""
        return self._frame(q.believed, _instant(on), _instant(about))

    def contradictions(self) -> pd.DataFrame:
        """Each side of each contradiction group held now, its evidence and supporting documents."""
        return self._frame(q.contradictions)

    def fact_evidence(self) -> pd.DataFrame:
        """Facts held now with their evidence counted per distinct document."""
        return self._frame(q.fact_evidence)

    def evidence_distribution(self) -> pd.DataFrame:
        """How many facts rest on 1, 2, 3 ... documents."""
        f = self.fact_evidence()
        return f.groupby("evidence").size().rename("facts").reset_index()

    def ambiguous_names(self) -> pd.DataFrame:
        """Aliases shared by several entities."""
        return self._frame(q.ambiguous_names)

    def merge_proposals(self) -> pd.DataFrame:
        return self._frame(q.merge_proposals)

    def neighbourhood(self, name_or_id: str, hops: int = 2) -> pd.DataFrame:
        """The relations the memory holds within `hops` of an entity: subject, predicate, object,
        label, window; `current` marks those true now."""
        entity_id, _ = self.entity(name_or_id)
        return self._frame(q.neighbourhood, [entity_id], hops)

    # -- the query space -----------------------------------------------------------------

    def sql(self, statement: str, *params: Any, max_rows: int | None = None) -> pd.DataFrame:
        """A read-only statement over `memory_v1`, checked by the query space's validator and run
        in its sandbox (`corpusmem sql`); a refusal raises `QueryRefused` with its code."""
        return self._query_frame(self._run(statement, list(params), max_rows, None))

    def saved_queries(self) -> pd.DataFrame:
        from sql.query_space import saved_queries

        return pd.DataFrame([{"name": f"{saved_queries.NAMESPACE}.{e.name}", "parameters": e.parameters,
                              "description": e.description} for e in saved_queries.examples()])

    def saved(self, name: str, *params: Any, max_rows: int | None = None) -> pd.DataFrame:
        """A saved query by `namespace.name` (see `saved_queries()`)."""
        from sql.query_space import query_manifest, saved_queries
        from sql.store import authority as store

        from jobs import sql_cli

        with store.connect(self.dsn, autocommit=True) as conn:
            surface = query_manifest.manifest_hash()
            saved_queries.seed(conn, surface)
            try:
                found = sql_cli.find_saved(conn, name, None, surface)
            except saved_queries.SavedQueryError as err:
                raise QueryRefused(err.code, err.message) from None
        return self._query_frame(self._run(found["sql"], list(params), max_rows, saved_queries.saved_query_ref(found)))

    def _run(self, statement: str, params: list[Any], max_rows: int | None, saved: dict | None) -> dict:
        from jobs import sql_cli
        from sql.store import authority as store

        with store.connect(self.dsn, autocommit=True) as conn:
            sandbox = sql_cli.sandbox_for(self.settings, self.dsn, conn)
        if sandbox is None:
            raise QueryRefused("no_deployment", sql_cli.NO_DEPLOYMENT)
        return sql_cli.run_statement(sandbox, statement, params, max_rows, saved)

    @staticmethod
    def _query_frame(result: dict) -> pd.DataFrame:
        if result["termination_reason"] != "completed":
            raise QueryRefused(result["error_code"], result["error_message"])
        return pd.DataFrame(result["rows"], columns=[c["name"] for c in result["columns"]])


class QueryRefused(RuntimeError):
    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code


def _is_uuid(text: str) -> bool:
    import uuid

    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _instant(value: datetime | str) -> datetime:
    """A date or instant; naive ones are UTC."""
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _missing(value: Any) -> bool:
    return value is None or pd.isna(value)


def _status(row: Any, now: datetime) -> str:
    if not _missing(row.invalidated_at):
        return "retracted"
    if _missing(row.valid_from) or (_missing(row.valid_until) and row.valid_precision != "open"):
        return "possible"
    if row.valid_from > now:
        return "future"
    if not _missing(row.valid_until) and row.valid_until <= now:
        return "past"
    return "current"


__all__ = ["open", "Memory", "AmbiguousEntity", "QueryRefused"]
