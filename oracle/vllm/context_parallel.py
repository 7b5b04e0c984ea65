"""vLLM's start-up checks for context parallelism, as its model runner makes them (sizing.py).

`check_attention_cp_compatibility` (v1/worker/cp_utils.py) runs when the model runner is
built, before any KV-cache planning:
- with --prefill-context-parallel-size > 1, 0.33 asserts `backend.supports_pcp()` for every
  layer that has an attention backend (Mamba layers' backends have no impl, so they fail it);
  0.24 asserts `impl.supports_pcp` for every attention impl;
- with --decode-context-parallel-size > 1, every attention impl must return the softmax LSE
  during decode (`need_to_return_lse_for_decode`, i.e. the impl class's
  `can_return_lse_for_decode`).
The layers here are built without a DCP process group (their impls see a DCP world of 1), so
the checks read the same class attributes vLLM's instances carry: the backend's
`get_impl_cls()`. 0.33's attention selector already skips backends without `supports_dcp`
(`AttentionBackend.validate_configuration`); 0.24's does not, so there the LSE check is what
refuses a backend without DCP.

On a GPU, 0.33 runs Model Runner V2 unless a feature needs V1; V1 refuses PCP ("Model Runner
V1 does not support: prefill context parallel"). This CPU box has no Triton, which alone
would make vLLM pick V1, so `v2_runner` asks for V2 the way a user would
(VLLM_USE_V2_MODEL_RUNNER=1) where PCP is set and the release has V2's PCP path.
"""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def v2_runner(dep: dict):
    """VLLM_USE_V2_MODEL_RUNNER=1 while building the config of a PCP deployment (0.33)."""
    from vllm.config import VllmConfig

    wanted = (dep.get("prefill_context_parallel_size") or 1) > 1 and hasattr(
        VllmConfig, "_get_v1_model_runner_unsupported_features")
    old = os.environ.get("VLLM_USE_V2_MODEL_RUNNER")
    if wanted:
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1"
    try:
        yield
    finally:
        if wanted:
            if old is None:
                os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
            else:
                os.environ["VLLM_USE_V2_MODEL_RUNNER"] = old


def _impl(backend):
    try:
        return backend.get_impl_cls()
    except NotImplementedError:
        return None


def refusal(vc) -> str | None:
    """vLLM's assertion message where `check_attention_cp_compatibility` would fail, else None."""
    from vllm.model_executor.layers.attention import Attention
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention

    pcp = vc.parallel_config.prefill_context_parallel_size
    dcp = vc.parallel_config.decode_context_parallel_size
    if pcp * dcp == 1:
        return None
    for layer in vc.compilation_config.static_forward_context.values():
        get_backend = getattr(layer, "get_attn_backend", None)
        if get_backend is None:
            continue
        backend = get_backend()
        has_impl = isinstance(layer, Attention | MLAAttention)  # the layers holding an impl
        impl = _impl(backend) if has_impl else None
        if pcp > 1 and hasattr(backend, "supports_pcp") and not backend.supports_pcp():
            return ("AssertionError: PCP requires attention backend support, but "
                    f"{backend.get_name()} does not support PCP.")
        if pcp > 1 and not hasattr(backend, "supports_pcp") and impl is not None \
                and not getattr(impl, "supports_pcp", False):
            return ("AssertionError: PCP requires attention impls' support, but the impl "
                    f"{impl.__name__} does not support PCP.")
        if dcp > 1 and impl is not None and not getattr(impl, "can_return_lse_for_decode", False):
            return ("AssertionError: Decode Context Parallelism (DCP) requires attention "
                    "implementations to return the softmax LSE during decode, but "
                    f"{impl.__name__} does not.")
    return None
