"""The commands, one module per command family; each registers itself on `cli.app`."""
