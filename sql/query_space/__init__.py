"""The memory_v1 query space: catalog, manifest, validator, runner, saved queries."""
