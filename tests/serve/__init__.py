"""Tests of `serve/`."""
