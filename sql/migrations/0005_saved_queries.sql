-- Saved queries: named, versioned memory_v1 statements (seed: guides/saved-queries).
-- A version runs only while it is `active` and was validated against the running manifest hash;
-- the 18 shipped `examples.*` queries are seeded by sql/saved_queries.py, never by this file.

CREATE TABLE IF NOT EXISTS saved_queries (
    query_id                        uuid PRIMARY KEY,
    namespace                       text NOT NULL CHECK (namespace ~ '^[a-z][a-z0-9_]*$'),
    name                            text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]*$'),
    version                         integer NOT NULL CHECK (version >= 1),
    sql                             text NOT NULL,
    description                     text,
    status                          text NOT NULL CHECK (status IN ('draft', 'pending_revalidation', 'active',
                                                                    'deprecated', 'disabled', 'broken')),
    origin                          text NOT NULL CHECK (origin IN ('human', 'agent', 'import', 'shipped_example')),
    assurance                       text CHECK (assurance IN ('customer_authored', 'customer_reviewed',
                                                              'shipped_example')),
    parameter_schema                jsonb NOT NULL DEFAULT '{}',
    declared_result_schema          jsonb,
    declared_interpretation         text,
    default_limits                  jsonb NOT NULL DEFAULT '{}',
    query_hash                      text NOT NULL DEFAULT '',
    validated_surface_manifest_hash text NOT NULL DEFAULT '',
    validation_report               jsonb NOT NULL DEFAULT '{}',
    author_principal                text NOT NULL,
    approver_principal              text,
    created_at                      timestamptz NOT NULL DEFAULT now(),
    updated_at                      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (namespace, name, version)
);

-- At most one version of a query runs: activating a new one deprecates the one it replaces.
CREATE UNIQUE INDEX IF NOT EXISTS saved_queries_one_active
    ON saved_queries (namespace, name) WHERE status = 'active';

-- temp_file_limit can be set only by a superuser, so the sandbox role cannot SET LOCAL it per
-- statement: it is fixed on the role instead (the seed's 65,536 KiB), where the role cannot raise it.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'corpusmem_query')
       AND (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER ROLE corpusmem_query SET temp_file_limit = '65536kB';
    END IF;
END
$$;
