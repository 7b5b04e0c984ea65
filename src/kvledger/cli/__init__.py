"""Command-line edge: `kvledger plan | explain | models | …`. Thin: parse, call, render."""

from kvledger.cli import plan_cmd, pools_cmd, report_cmd, sim_cmd, verify_cmd  # noqa: F401  (registers commands)
from kvledger.cli.app import app


def main() -> None:
    app()
