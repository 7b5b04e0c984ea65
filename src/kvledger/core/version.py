"""The package version, in the one place every document and page reads it from."""

__version__ = "0.1.0"
