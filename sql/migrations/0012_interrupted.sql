-- An import stopped by SIGINT or SIGTERM is `interrupted`, not `failed`: nothing went wrong with
-- its work, and a re-run resumes it (its claims were released when it stopped).
ALTER TABLE import_runs DROP CONSTRAINT import_runs_status_check;
ALTER TABLE import_runs ADD CONSTRAINT import_runs_status_check
    CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted'));
