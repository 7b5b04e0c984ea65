"""SGLang launch flags → Deployment: the flag table, the parser and its help text.

>>> parse_flags(["--tp", "8", "--dp", "8", "--enable-dp-attention"]).deployment.attn_dp_size
8
"""

from kvledger.sglang.launch.flags import FLAGS, IGNORED, UNSUPPORTED, Flag, flags_help
from kvledger.sglang.launch.parse import ParsedFlags, parse_flags

__all__ = ["FLAGS", "IGNORED", "UNSUPPORTED", "Flag", "ParsedFlags", "flags_help", "parse_flags"]
