"""Tests of `pipeline/`."""
