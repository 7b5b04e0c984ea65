"""glm_moe_dsa (GLM-5, GLM-5.2): DeepSeek-V3.2's layout with "shared" indexer layers.

GLM-5.2 lists `indexer_types` (21 of 78 layers "full") and also the rule that generates it
(`index_topk_freq` 4, `index_skip_topk_offset` 3); `dsa.indexer_owners` checks they agree.
"""

from __future__ import annotations

from kvledger.model.arch import Family, ModelArch
from kvledger.model.families.deepseek_v32 import read_dsa
from kvledger.model.reader import ConfigReader


def read(root: ConfigReader, name: str) -> ModelArch:
    return read_dsa(root, name, Family.GLM_MOE_DSA)
