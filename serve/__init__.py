"""The Ray Serve read API (not built yet)."""
