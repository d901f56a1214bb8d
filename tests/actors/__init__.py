"""Tests of `actors/`."""
