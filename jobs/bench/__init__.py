"""Benchmarks, each against a baseline measured in the same run, and their data generators."""
