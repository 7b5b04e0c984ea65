"""Model config → architecture. Pure Python; never imports torch."""
