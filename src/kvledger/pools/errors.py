"""Errors the device pools raise for caller misuse and for broken invariants.

Running out of capacity is not an error: allocators return None. These exceptions are for
what must never happen silently: freeing what was never allocated, a conservation law that no
longer holds, or asking a layer for a kind of memory it does not have.
"""

from __future__ import annotations


class AllocatorError(RuntimeError):
    """A free of an id that is not allocated (double free, reserved id, never handed out)."""


class IntegrityError(RuntimeError):
    """`check_integrity()` found a broken conservation law; the message names it."""


class LayerKindError(ValueError):
    """A layer asked for memory it does not own (KV of a linear layer, state of a full layer)."""
