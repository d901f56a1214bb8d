-- One owner per unit of work, across every process on one authority.
--
-- A version's document pipeline (convert .. embed_claim) is claimed on its `convert` row:
-- `owner_run` names the import run that holds it, and the row is `running` (or `failed` with
-- `defer_reason = 'retry_backoff'` between attempts). A claim is taken by a status transition
-- (`pending`, or a dead owner's row, to `running`) under `FOR UPDATE SKIP LOCKED`, so two
-- queues never take the same version, and the writer lands only the versions its run still owns.
--
-- An owner is alive while its driver holds a session-level advisory lock on the run. Why a lock
-- and not a lease with an expiry: a version's work spans processes (the ingest actor claims it,
-- stage tasks and the write actor finish it), but one connection, the driver's, lives exactly
-- as long as the run. Its lock needs no heartbeat and no clocks, and it ends with the driver's
-- connection: a killed import's claims are free as soon as PostgreSQL sees the socket close,
-- not after a lease runs out, so a re-run resumes them at once.
--
-- Advisory locks are keyed (class, hashtext(name)). A hash collision can only make two unrelated
-- names wait for each other (or a dead owner look alive until the other run ends), never let
-- two owners in at once.

ALTER TABLE stage_work ADD COLUMN owner_run uuid;
CREATE INDEX stage_work_owner ON stage_work (owner_run) WHERE owner_run IS NOT NULL;

-- The advisory-lock class of each kind of ownership.
CREATE FUNCTION work_lock_class(kind text) RETURNS integer LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE kind
        WHEN 'run' THEN 7701          -- held by a run's driver for the whole run
        WHEN 'pipeline' THEN 7702     -- held by a run's driver until its document pipeline ends
        WHEN 'facts' THEN 7703        -- held by the one facts phase running on this authority
        WHEN 'entity' THEN 7704       -- held by the adjudicator deciding an entity
        WHEN 'mention_key' THEN 7705  -- held by the resolver deciding a mention key
    END
$$;

-- Whether some session of this database holds the lock (kind, name) now.
CREATE FUNCTION work_lock_held(kind text, name text) RETURNS boolean LANGUAGE sql STABLE STRICT AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = work_lock_class(kind)::oid AND l.objid = hashtext(name)::oid)
$$;

-- The owner of a claim is alive: its driver still holds the run lock.
CREATE FUNCTION run_is_live(run uuid) RETURNS boolean LANGUAGE sql STABLE STRICT AS $$
    SELECT work_lock_held('run', run::text)
$$;
