"""Option schemas: dataclasses of typer options, one per group of flags."""
