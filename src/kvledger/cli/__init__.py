"""Command-line edge: `kvledger plan | explain | models | …`. Thin: parse, call, render."""

from kvledger.cli import (  # noqa: F401  (registers commands)
    checklog_cmd,
    plan_cmd,
    pools_cmd,
    replay_cmd,
    report_cmd,
    sim_cmd,
    sweep_cmd,
    verify_cmd,
)
from kvledger.cli.app import app


def main() -> None:
    app()
