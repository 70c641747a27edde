"""companion: an on-device empathy companion for home field studies."""

__version__ = "0.2.0"
