"""Safety: bash parsing, the deny rules, catbuddy's protected files, the approval policy (architecture §8)."""
