"""Memories: the one door for every change to a memory (add, update, import, delete, prune,
validate, promote, expire), the one validator of every field, the lifecycle rules (tiers,
decay, triggers, feedback, promotion, token budgets), JSON-lines transfer, checkpoints of the
store, and the daily log files that mirror memories as markdown.

May import: memoryd.core, memoryd.text, memoryd.store.
"""
