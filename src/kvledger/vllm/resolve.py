"""Steps 1 and 2 of a vLLM layout: the defaults vLLM resolves before it sizes any layer.

- max_model_len: --max-model-len (refused above the config's derived length without
  VLLM_ALLOW_LONG_MAX_MODEL_LEN), else the config's;
- prefix caching and mamba_cache_mode for a hybrid: the rule set's default
  (`MambaModelConfig.verify_and_update_config`, model_executor/models/config.py): prefix
  caching on → align, off → none; a mode the release lacks is refused or, where the release
  does so, prefix caching is turned off with vLLM's log line;
- `--kv-cache-dtype auto` made fp8 on SM10x for the model classes whose
  verify_and_update_config does so;
- gpu_memory_utilization and max_num_seqs: the rule set's defaults;
- before them, the scale-out sizes: --pipeline-parallel-size against the model's decoder
  layers, DCP and PCP as `kvledger.vllm.context_parallel` checks them; a rule set not read for
  them refuses them.

>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.rules import RULES
>>> dep = resolve_deployment(load_model("qwen3-next-80b-a3b-instruct"), VllmDeployment(),
...                          RULES["vllm-0.33"], None, [])
>>> dep.enable_prefix_caching, dep.mamba_cache_mode.value, dep.gpu_memory_utilization
(True, 'align', 0.92)
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.core.errors import DeploymentError
from kvledger.core.gpus import GPU
from kvledger.model.arch import ModelArch
from kvledger.vllm.context_parallel import check_pcp_layers, check_sizes
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.rules import RULES, MambaCacheMode, VllmRules


def _read_for(wanted) -> str:
    return " and ".join(name for name in RULES.names if wanted(RULES[name]))


def _check_scale_out(model: ModelArch, dep: VllmDeployment, rules: VllmRules) -> None:
    pp = dep.pipeline_parallel_size
    if pp > 1 and not rules.pipeline_parallel:
        raise DeploymentError(f"--pipeline-parallel-size {pp}: rule set {rules.name} does not "
                              "model pipeline parallelism (read for "
                              f"{_read_for(lambda r: r.pipeline_parallel)})")
    if pp > model.num_layers:
        raise DeploymentError(f"--pipeline-parallel-size {pp}: {model.name} has only "
                              f"{model.num_layers} decoder layers to split")
    cp = rules.context_parallel
    for name, flag in (("decode_context_parallel_size", "--decode-context-parallel-size"),
                       ("prefill_context_parallel_size", "--prefill-context-parallel-size")):
        if getattr(dep, name) > 1 and cp is None:
            raise DeploymentError(f"{flag} {getattr(dep, name)}: rule set {rules.name} does not "
                                  "model context parallelism (read for "
                                  f"{_read_for(lambda r: r.context_parallel is not None)})")
    if cp is not None:
        check_sizes(model, dep, cp)
        check_pcp_layers(model, dep, cp)


def _cache_mode(model: ModelArch, dep: VllmDeployment, rules: VllmRules,
          notes: list[str]) -> tuple[bool, MambaCacheMode | None]:
    if not model.is_hybrid:
        return dep.enable_prefix_caching is not False, None
    caching = dep.enable_prefix_caching
    if caching is None:
        caching = dep.mamba_cache_mode is MambaCacheMode.ALIGN or (
            dep.mamba_cache_mode is None and rules.hybrid_prefix_caching_default)
    mode = dep.mamba_cache_mode or (MambaCacheMode.ALIGN if caching else MambaCacheMode.NONE)
    from_flag = dep.mamba_cache_mode is None
    if (mode not in rules.mamba_cache_modes and from_flag
            and rules.disables_unsupported_prefix_caching
            and model.family not in rules.mamba_prefix_caching_families):
        notes.append(f"--enable-prefix-caching: {rules.name} logs 'Hybrid or mamba-based model "
                     "detected without support for prefix caching: disabling.' and starts "
                     "without it")
        return False, MambaCacheMode.NONE
    if mode not in rules.mamba_cache_modes:
        experimental = (from_flag and rules.disables_unsupported_prefix_caching)
        raise DeploymentError(
            f"--mamba-cache-mode {mode.value}"
            + (" (from --enable-prefix-caching)" if from_flag else "")
            + (f": {rules.name}'s experimental Mamba prefix caching for {model.family.value} "
               "(mamba_block_size = block_size) is not modelled" if experimental else
               f": {rules.name} supports "
               f"{', '.join(sorted(m.value for m in rules.mamba_cache_modes))} for hybrid "
               "models (it turns prefix caching off for them)"))
    if caching and mode is MambaCacheMode.NONE:
        notes.append("prefix caching with mamba_cache_mode none: only attention blocks are cached")
    return caching, mode


def resolve_deployment(model: ModelArch, dep: VllmDeployment, rules: VllmRules, gpu: GPU | None,
             notes: list[str]) -> VllmDeployment:
    """Steps 1 and 2: max_model_len, prefix caching, mamba_cache_mode and the rule set's
    defaults (gpu_memory_utilization, max_num_seqs) written into the deployment."""
    _check_scale_out(model, dep, rules)
    max_len = dep.max_model_len or model.max_context_tokens
    if dep.max_model_len and model.max_context_tokens and dep.max_model_len > model.max_context_tokens:
        raise DeploymentError(
            f"--max-model-len {dep.max_model_len}: exceeds the model's derived max_model_len "
            f"{model.max_context_tokens} (vLLM refuses it without VLLM_ALLOW_LONG_MAX_MODEL_LEN)")
    caching, mode = _cache_mode(model, dep, rules, notes)
    auto_fp8 = dict(rules.auto_kv_fp8_on_sm100).get(model.family)
    if (auto_fp8 and dep.kv_cache_dtype == "auto" and gpu is not None and not gpu.arch.is_rocm
            and gpu.compute_capability[0] == 10):
        notes.append(f"--kv-cache-dtype auto: vLLM stores {auto_fp8} for {model.family.value} on "
                     "SM10x (the model class's verify_and_update_config)")
        dep = replace(dep, kv_cache_dtype=auto_fp8)
    if dep.max_num_seqs is None and gpu is None:
        notes.append(f"--max-num-seqs not given and no --gpu: assumed "
                     f"{rules.default_max_num_seqs(None)} (256 on GPUs under 70 GiB and A100s)")
    return replace(dep, max_model_len=max_len, enable_prefix_caching=caching, mamba_cache_mode=mode,
                   gpu_memory_utilization=dep.gpu_memory_utilization
                   or rules.default_gpu_memory_utilization,
                   max_num_seqs=dep.max_num_seqs or rules.default_max_num_seqs(gpu))
