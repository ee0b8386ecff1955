"""Governance: the pure rules that fit each request to the window, and their report (architecture §4)."""
