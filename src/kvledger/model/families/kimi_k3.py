"""kimi_k3: Kimi-K3, a multimodal wrapper whose `text_config` is a Kimi-Linear decoder.

SGLang serves it with its native model class (models/kimi_k3.py), whose language model is
the Kimi-Linear stack: KDA linear-attention layers and MLA full-attention layers, listed
1-based in `linear_attn_config` (24 full + 69 KDA of 93 for Kimi-K3). The cache ledgers are
Kimi-Linear's, read from `text_config`; the vision section makes it multimodal.

Weights are not estimated: Kimi-K3's latent MoE (`routed_expert_hidden_size`), full-rank KDA
gates and output-gated MLA are not modelled by the Kimi-Linear counts, so --gpu needs
--weights-gib. Its `compressed-tensors` mxfp4 scheme (routed experts only; attention, shared
experts, dense MLPs, lm_head and the vision tower in its ignore list) is recorded.
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.model import weights
from kvledger.model.arch import Family, ModelArch
from kvledger.model.families import kimi_linear
from kvledger.model.reader import ConfigReader


def read(root: ConfigReader, name: str) -> ModelArch:
    text = root.text_config()
    if text is root:
        raise root.error("text_config", "is missing (Kimi-K3 nests its decoder there)")
    vision = root.optional_section("vision_config")
    arch = kimi_linear.read(text, name)
    return replace(
        arch, source=root.source, family=Family.KIMI_K3, model_type=root.str("model_type"),
        is_multimodal=vision is not None,
        vit_shape=weights.vit_shape(vision) if vision else None,
        num_params=None, params=None, quant=weights.quant_method(root),
    )
