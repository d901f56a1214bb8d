"""Tests of `jobs/`."""
