"""The queries behind the read API, the CLI, the demo and the benchmarks."""
