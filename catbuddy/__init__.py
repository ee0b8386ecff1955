"""catbuddy: a local-first terminal coding assistant built around context engineering."""

__version__ = "0.1.0"
