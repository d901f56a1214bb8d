"""The test suite; its folders mirror the packages (jobs, serve, actors, sql, pipeline)."""
