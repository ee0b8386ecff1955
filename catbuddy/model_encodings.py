"""Which encoding a model counts with (docs/architecture.md §3).

Beside the configuration, not in ``context/counting``: the settings name a model's encoding without
importing the counter (``config_schema.ENCODINGS`` lists the names; ``tests/context/counting/
test_encoding_names.py`` checks they are the encodings the counter has)."""

from __future__ import annotations

# Model name prefixes → encoding; longest prefix wins. Unknown models use the configured default.
MODEL_ENCODINGS = {
    "gpt-5": "o200k_base",
    "gpt-4.5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "chatgpt-4o": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "gpt-35": "cl100k_base",
}


def encoding_name_for_model(model: str, default: str = "o200k_base") -> str:
    name = model.split("/")[-1].lower()
    if name.startswith("ft:"):
        name = name[3:]
    matches = [prefix for prefix in MODEL_ENCODINGS if name.startswith(prefix)]
    return MODEL_ENCODINGS[max(matches, key=len)] if matches else default
