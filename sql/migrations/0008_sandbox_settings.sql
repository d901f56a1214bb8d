-- The sandbox role may not call set_config, so a statement cannot change the settings it runs
-- under: its evaluation clock (`corpusmem.evaluated_at`), its search budgets
-- (`corpusmem.search_candidates`, `corpusmem.chunk_body_bytes`), the records the runner reports
-- (`corpusmem.semantic_invocations`, `corpusmem.graph_invocations`), its query vectors, its
-- timeouts, or `role`. Those are the runner's: it sets each of them with SET LOCAL before the
-- statement, and needs no function for it. A statement cannot issue SET or RESET itself (the
-- runner sends it as one query: a cursor, or a prepared EXPLAIN), and pg_settings' update rule
-- calls set_config with the caller's rights, so with this privilege gone PostgreSQL refuses every
-- way a statement the validator let through by mistake had to change them.
--
-- The search and graph functions still record what each call did through set_config: they are
-- SECURITY DEFINER, so the privilege is checked against their owner, who keeps it.
--
-- Function privileges belong to one database: only this memory's database changes. Privileges are
-- only granted, never denied to one role, so the privilege leaves PUBLIC and comes back to the
-- roles that need it here: the migrating role, the database's owner and the owners of the
-- memory_v1 functions (a superuser needs no grant). Another role that connects to this database and
-- calls set_config needs `GRANT EXECUTE ON FUNCTION pg_catalog.set_config(text, text, boolean) TO`
-- it.
--
-- Only a superuser can change the privileges of a pg_catalog function. Where the migrating role is
-- not one (a managed PostgreSQL), this migration changes nothing and says so in a WARNING naming
-- the statements a superuser can run later; until then the validator alone keeps set_config out
-- of statements, the runner still sets every setting itself, and it logs that the database does
-- not refuse set_config to the sandbox.
DO $$
DECLARE
    keeper name;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'corpusmem_query') THEN
        RETURN;   -- no sandbox role, no statements (0004 warned already)
    END IF;
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        FOR keeper IN
            SELECT r.rolname FROM pg_roles r
            WHERE NOT r.rolsuper AND r.rolname <> 'corpusmem_query'
              AND (r.rolname = current_user
                   OR r.oid = (SELECT d.datdba FROM pg_database d WHERE d.datname = current_database())
                   OR r.oid IN (SELECT p.proowner FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                                WHERE n.nspname IN ('memory_v1', 'memory_v1_private')))
        LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION pg_catalog.set_config(text, text, boolean) TO %I', keeper);
        END LOOP;
        REVOKE EXECUTE ON FUNCTION pg_catalog.set_config(text, text, boolean) FROM PUBLIC;
    END IF;
    IF has_function_privilege('corpusmem_query', 'pg_catalog.set_config(text, text, boolean)', 'EXECUTE') THEN
        RAISE WARNING 'the sandbox role corpusmem_query can still call set_config in database %: '
                      'only a superuser can revoke it, and % is not one', current_database(), current_user
            USING HINT = 'As a superuser, in this database: GRANT EXECUTE ON FUNCTION pg_catalog.set_config(text, '
                         'text, boolean) TO ' || quote_ident(current_user) || '; REVOKE EXECUTE ON FUNCTION '
                         'pg_catalog.set_config(text, text, boolean) FROM PUBLIC;';
    END IF;
END
$$;
