"""Sizing: many deployments of one model: a grid sweep, a side-by-side comparison, recommendations.

Built on the engines' planning calls through the one engine-plan interface
(`kvledger.core.plan.EnginePlan`): deployment-wide numbers are the plans' own (`totals`),
never recomputed here, and nothing here asks which engine made a plan.

- axes.py       the grid: comma lists of GPUs, nodes, tp, dp, dtypes → deployment points
- engines.py    each engine's planner of one point, behind one signature
- run.py        plan every point; one SweepRow per deployment and engine (a plan, or why not)
- compare.py    two plans side by side, each quantity marked when it differs
- recommend.py  the cheapest layouts that fit a workload, and why the others do not
- translate.py  the flags both engines share, for side-by-side plans
- vllm_point.py   a point under vLLM's rules: the same GPUs in vLLM's flags
- flag_plans.py   one deployment given as one engine's flags, planned by every engine asked
- documents.py    the sweep, compare and recommend `--json` documents
- prices.py       USD per GPU-hour that rank fleets by cost (`recommend --gpu-price`)
The launch command of a plan is its own (`EnginePlan.launch_command`: `sglang_command`,
`vllm_command`, re-exported here).
"""

from kvledger.sglang.launch.line import sglang_command
from kvledger.sizing.axes import GPUS_PER_NODE, Axes, Point, parse_axis
from kvledger.sizing.compare import Comparison, Difference, compare
from kvledger.sizing.recommend import Recommendation, Recommendations, recommend
from kvledger.sizing.run import NotPlanned, Sweep, SweepRow, sweep
from kvledger.vllm.serve_line import vllm_command

__all__ = ["GPUS_PER_NODE", "Axes", "Comparison", "Difference", "NotPlanned", "Point",
           "Recommendation", "Recommendations", "Sweep", "SweepRow", "compare", "parse_axis",
           "recommend", "sglang_command", "sweep", "vllm_command"]
