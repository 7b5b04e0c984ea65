"""Checkpoint quantization: which method, and the bytes each part of the network stores.

From `quantization_config.quant_method` (HF configs), or SGLang's `--quantization`, which
overrides it. Storage width per parameter, scales included:
- fp8 (block or per-tensor): 1 B for every linear layer (block scales, 4 B per 128×128, are
  under 0.03 % and left out);
- mxfp4 (gpt-oss style): routed experts only, 4 bits + one e8m0 scale per 32 = 0.53125 B;
  everything else stays bf16;
- modelopt_fp4 / nvfp4: 4 bits + one fp8 scale per 16 = 0.5625 B for every linear layer;
- awq, gptq (4-bit, group 128): 4 bits + an fp16 scale and a 4-bit zero per 128 =
  0.51953125 B for every linear layer.
Embeddings, lm_head and the vision tower stay bf16 (2 B) in every scheme.

>>> QuantMethod.from_config("modelopt", "NVFP4").linear_bytes
0.5625
>>> QuantMethod.MXFP4.bytes_for("attention"), QuantMethod.MXFP4.bytes_for("experts")
(2.0, 0.53125)
"""

from __future__ import annotations

from enum import Enum

BF16_BYTES = 2.0
LINEAR_PARTS = ("attention", "linear_mixers", "mlp", "experts", "draft_attention", "draft_ffn")


class QuantMethod(Enum):
    FP8 = "fp8"
    MXFP4 = "mxfp4"
    NVFP4 = "modelopt_fp4"
    AWQ = "awq"
    GPTQ = "gptq"

    @property
    def linear_bytes(self) -> float:
        return {QuantMethod.FP8: 1.0, QuantMethod.MXFP4: 0.5 + 1 / 32,
                QuantMethod.NVFP4: 0.5 + 1 / 16, QuantMethod.AWQ: 0.5 + 2.5 / 128,
                QuantMethod.GPTQ: 0.5 + 2.5 / 128}[self]

    def bytes_for(self, part: str) -> float:
        """Bytes per parameter of one `ParamCounts` field under this scheme."""
        quantized = (part == "experts" if self is QuantMethod.MXFP4 else part in LINEAR_PARTS)
        return self.linear_bytes if quantized else BF16_BYTES

    @classmethod
    def from_config(cls, method: str, algo: str | None = None) -> QuantMethod:
        """A `quant_method` (and ModelOpt's `quant_algo` or compressed-tensors' `format`) as
        checkpoints spell them."""
        name = method.lower()
        if name == "compressed-tensors":
            # compressed-tensors names the scheme in `format` ("mxfp4-pack-quantized", …)
            fmt = (algo or "").lower()
            name = next((n for n in ("mxfp4", "nvfp4") if n in fmt), method)
        if name == "modelopt":
            name = "fp8" if (algo or "").upper() == "FP8" else "modelopt_fp4"
        name = {"nvfp4": "modelopt_fp4", "modelopt_fp8": "fp8"}.get(name, name)
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"quantization {method!r}: expected one of "
                             f"{', '.join(m.value for m in cls)} (or modelopt, nvfp4)") from None


def bytes_for(method: QuantMethod | None, part: str) -> float:
    return BF16_BYTES if method is None else method.bytes_for(part)
