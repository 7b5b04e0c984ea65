"""Engine-neutral errors: bad deployment input, whichever engine's flags it came in.

Both engines' deployments (`kvledger.sglang.deploy`, `kvledger.vllm.deploy`) raise it; the
CLI turns it into one `error: …` line and exit code 2.

>>> issubclass(DeploymentError, ValueError), str(DeploymentError("--tp-size 6: expected a divisor of 8"))
(True, '--tp-size 6: expected a divisor of 8')
"""


class DeploymentError(ValueError):
    """Invalid or contradictory deployment flags; the message names the flag."""
