"""Compaction's pure part: the plan, the prompts, the ledger, the user's own words (architecture §5)."""
