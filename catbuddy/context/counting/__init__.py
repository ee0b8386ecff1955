"""Counting: the encodings, the token counter, the one measure of a request, calibration (architecture §3)."""
