"""Sizing: many deployments of one model: a grid sweep, a side-by-side comparison, recommendations.

Built on the one planning call (`kvledger.sglang.plan.make_plan`); deployment-wide numbers are the
plan's own totals (`CapacityPlan.totals`), never recomputed here.

- axes.py       the grid: comma lists of GPUs, nodes, tp, dp, dtypes → deployment points
- run.py        plan every point; one SweepRow per deployment (a plan, or why it fails)
- compare.py    two plans side by side, each quantity marked when it differs
- recommend.py  the cheapest layouts that fit a workload, and why the others do not
- launch_line.py  the SGLang (and vLLM) launch command that reproduces a deployment
- vllm_point.py   a point under vLLM's rules: the same GPUs in vLLM's flags, vLLM's totals
"""

from kvledger.sizing.axes import GPUS_PER_NODE, Axes, Point, parse_axis
from kvledger.sizing.compare import Difference, compare
from kvledger.sizing.launch_line import sglang_command, vllm_command
from kvledger.sizing.recommend import Recommendation, Recommendations, recommend
from kvledger.sizing.run import SweepRow, sweep

__all__ = ["GPUS_PER_NODE", "Axes", "Difference", "Point", "Recommendation", "Recommendations",
           "SweepRow", "compare", "parse_axis", "recommend", "sglang_command", "sweep",
           "vllm_command"]
