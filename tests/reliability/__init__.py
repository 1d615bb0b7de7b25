"""The reliability suite (see support.py)."""
