"""Entry points: the `corpusmem` CLI and the Ray jobs it runs."""
