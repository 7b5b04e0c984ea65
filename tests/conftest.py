"""Test-wide settings."""

from hypothesis import settings

# Timing is not what these properties test; a loaded 2-core CI machine must not turn a slow
# example into a failure.
settings.register_profile("kvledger", deadline=None)
settings.load_profile("kvledger")
