"""Retrieval for the read API: nominate, fuse, confirm, expand."""
