"""The configuration names encodings without importing the counter (it sits below context/ in the
layering, docs/architecture.md §1), so these tests tie its names to the encodings the counter can load."""

from __future__ import annotations

from catbuddy.config import DEFAULT_ENCODING, ENCODINGS
from catbuddy.context.counting.encodings import ENCODING_SOURCES
from catbuddy.model_encodings import MODEL_ENCODINGS


def test_the_encodings_config_accepts_are_the_ones_the_counter_loads() -> None:
    assert sorted(ENCODINGS) == sorted(ENCODING_SOURCES)


def test_the_default_encoding_is_one_the_counter_loads() -> None:
    assert DEFAULT_ENCODING in ENCODING_SOURCES


def test_every_model_maps_to_an_encoding_the_counter_loads() -> None:
    assert {name for name in MODEL_ENCODINGS.values() if name not in ENCODING_SOURCES} == set()
