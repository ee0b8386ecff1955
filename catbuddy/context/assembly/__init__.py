"""Assembly: the five-layer system prompt and its fingerprint cache (architecture §2)."""
