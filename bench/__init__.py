"""memoryd benchmarks: see BENCHMARKS.md. Run with `python -m bench`."""
