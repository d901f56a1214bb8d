"""Everything that knows table names: migrations, the store, the embedded PostgreSQL."""
