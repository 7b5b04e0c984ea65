"""kvledger: byte-exact KV-cache ledgers and a reference memory system for hybrid LLMs."""

__version__ = "0.1.0"
