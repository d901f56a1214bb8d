"""Tests of `sql/`."""
