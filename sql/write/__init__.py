"""Writes: ingest, COPY batches, assertions, entities, facts, reconcile."""
