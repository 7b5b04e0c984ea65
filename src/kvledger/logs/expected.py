"""The boot lines an engine prints for a deployment, and the ones a log lacks.

A verdict of "reconciles" is only as good as the log: a log cut after `Available KV cache
memory` shows one input and no derived number, so nothing in it can differ. Each engine prints
a known set of lines for a deployment; a log lacking one of them is incomplete.

vLLM (V1 engine, 0.10 on), INFO level unless noted:
- `Initializing a V1 LLM engine (vX) with config: …` (v1/engine/core.py), config included;
- `Model loading took X GiB` (v1/worker/gpu_model_runner.py);
- `Available KV cache memory: X GiB` (v1/worker/gpu_worker.py), unless
  --kv-cache-memory-bytes skips the profiling;
- hybrids: `Setting attention block size to N tokens` when the alignment raises the block,
  `Padding mamba page size by X%` when the state page is padded (platforms/interface.py
  `_align_hybrid_block_size`);
- `Add N padding layers` (WARNING) when a layer type does not fill its KV-cache groups
  (`_get_kv_cache_groups_uniform_page_size`);
- `GPU KV cache size: N tokens` and `Maximum concurrency for N tokens per request`
  (v1/core/kv_cache_utils.py).
`non-default args` (the API server's) and `num_gpu_blocks is` (INFO in some releases, DEBUG in
others) are read when present, never required.

SGLang: `server_args=ServerArgs(…)`, `Load weight end`, `Mamba Cache is allocated` (models with
a state pool), `KV Cache is allocated` and the `max_total_num_tokens=` line.
"""

from __future__ import annotations

from kvledger.logs.engine_config import ALWAYS_PRINTED, parse_engine_config
from kvledger.logs.lines import LogScan
from kvledger.logs.reconcile import ExpectedLine
from kvledger.vllm.layout import VllmLayout


def _line(text: str, why: str) -> ExpectedLine:
    return ExpectedLine(text=text, why=why)


def _pads_layers(lay: VllmLayout) -> bool:
    counts = [lay.model.num_full_layers] + ([lay.model.num_linear_layers] if lay.mamba else [])
    return any(n % lay.group_size for n in counts if n)


def vllm_expected(lay: VllmLayout) -> tuple[tuple[str, ExpectedLine], ...]:
    """(scan key, line) for every line vLLM prints for this layout."""
    out = [("vllm_engine_init", _line("Initializing a V1 LLM engine (vX.Y.Z) with config: …",
                                      "every V1 boot")),
           ("vllm_model_loading_gib", _line("Model loading took X GiB", "every V1 boot"))]
    if lay.alignment is not None and lay.alignment.raised:
        out.append(("vllm_block_set", _line(
            f"Setting attention block size to {lay.block_tokens:,} tokens",
            f"the hybrid alignment raises the block from {lay.alignment.requested_block_tokens}")))
    if lay.alignment is not None and lay.alignment.mamba_padding_bytes > 0:
        out.append(("vllm_padding_pct", _line(
            "Padding mamba page size by X%",
            f"the state page is padded by {lay.alignment.mamba_padding_bytes:,} B")))
    if lay.deployment.kv_cache_memory_bytes is None:
        out.append(("vllm_available_gib", _line("Available KV cache memory: X GiB",
                                                "memory is profiled (no --kv-cache-memory-bytes)")))
    if _pads_layers(lay):
        out.append(("vllm_padding_layers", _line(
            "Add N padding layers, may waste at most X% KV cache memory",
            f"a layer type does not fill groups of {lay.group_size}")))
    out += [("vllm_tokens", _line("GPU KV cache size: N tokens", "every V1 boot")),
            ("vllm_concurrency", _line("Maximum concurrency for N tokens per request: Xx",
                                       "every V1 boot"))]
    return tuple(out)


def missing_vllm_lines(scan: LogScan, lay: VllmLayout) -> tuple[ExpectedLine, ...]:
    missing = [line for key, line in vllm_expected(lay) if scan.get(key) is None]
    if (init := scan.get("vllm_engine_init")) is not None:
        # the engine-init line is there; its config must be too, uncut
        config = scan.get("vllm_engine_config")
        cut = ALWAYS_PRINTED if config is None else parse_engine_config(config.value).cut
        if cut:
            line_no = init.line_no
            missing.append(_line(
                "… with config: model=…, max_seq_len=…, enable_prefix_caching=…",
                f"line {line_no} is cut before "
                + ("its config" if config is None else ", ".join(f"{k}=" for k in cut))))
    return tuple(missing)


def missing_sglang_lines(scan: LogScan, *, has_state_pool: bool) -> tuple[ExpectedLine, ...]:
    expected = [("sglang_server_args", _line("server_args=ServerArgs(…)", "every launch")),
                ("sglang_load_weight", _line("Load weight end. … avail mem=X GB", "every launch"))]
    if has_state_pool:
        expected.append(("sglang_mamba", _line("Mamba Cache is allocated. max_mamba_cache_size: N",
                                               "the model has a state pool")))
    expected += [("sglang_kv", _line("KV Cache is allocated. #tokens: N", "every launch")),
                 ("sglang_totals", _line("max_total_num_tokens=N, … max_running_requests=N",
                                         "every launch"))]
    return tuple(line for key, line in expected if scan.get(key) is None)
