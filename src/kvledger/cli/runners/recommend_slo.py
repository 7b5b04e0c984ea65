"""`recommend --trace FILE --ttft-p95-ms X`: size a fleet for an SLO by replaying it.

The search is `kvledger.sim.fleet.slo_search`; this module turns the options into its inputs,
draws the progress bar and prints the table or the JSON document.
"""

from __future__ import annotations

from kvledger.cli.app import check_finite, console, emit_json, err_console
from kvledger.cli.options.slo import SloInputs
from kvledger.core.runner import Runner
from kvledger.sglang.launch.parse import ParsedFlags

DEFAULT_SLO_GPU = "H200"  # the simulator's default time GPU (`kvledger.sim.config`)


def workload_words(slo: SloInputs, rules: str) -> tuple[str, ...]:
    """The `simulate` options that replay the searched workload (non-default ones only)."""
    from kvledger.sglang.rules import DEFAULT_RULES

    words: list[str] = []
    if slo.trace is not None:
        words += ["--trace", str(slo.trace)]
    if slo.workload is not None:
        words += ["--workload", slo.workload]
    for flag, value, default in (("--num-requests", slo.num_requests, None),
                                 ("--seed", slo.seed, 0), ("--rate", slo.rate, None),
                                 ("--time-scale", slo.time_scale, 1.0)):
        if value != default:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if rules != DEFAULT_RULES:
        words += ["--rules", rules]
    return tuple(words)


def run_slo_command(slo_in: SloInputs, extra: list[str], *, model: str | None,
                    gpu: str | None, rules: str, engine: str | None, requests: int | None,
                    context: int | None, unused: dict[str, bool], runner: Runner, progress: bool,
                    json: bool) -> bool:
    """The checks of `recommend`'s SLO mode, then the search (`run_recommend_slo`);
    `unused`: options of the concurrency mode, refused when given."""
    from kvledger.model.config import DEFAULT_MODEL
    from kvledger.sglang.launch import parse_flags
    from kvledger.sizing import parse_axis

    if requests is not None or context is not None:
        raise ValueError("--requests/--context: a concurrency check; with --trace/--workload "
                         "the SLO sizes the fleet (give one or the other)")
    for flag, given in unused.items():
        if given:
            raise ValueError(f"{flag}: an option of recommend --requests/--context; not "
                             "with --trace/--workload (the search plans every tp from the "
                             "model's own weights)")
    if engine is not None and engine.strip() != "sglang":
        raise ValueError(f"--engine {engine}: fleets are of SGLang replicas; --trace sizes "
                         "SGLang fleets only")
    parsed = parse_flags(extra)
    name = model or parsed.model_ref or DEFAULT_MODEL
    gpus = parse_axis("--gpu", gpu, str) if gpu else None
    return run_recommend_slo(slo_in, parsed, model=name, gpus=gpus, rules=rules, runner=runner,
                             progress=progress, json=json)


def run_recommend_slo(slo_in: SloInputs, parsed: ParsedFlags, *, model: str, gpus, rules: str,
                      runner: Runner, progress: bool, json: bool) -> bool:
    """Search, then print; True when a fleet meets the SLO."""
    from kvledger.cli.runners.run_bar import RunBar
    from kvledger.cli.runners.simulation import load_inputs
    from kvledger.core.limits import check_count
    from kvledger.report.slo_json import slo_json
    from kvledger.report.slo_view import render_slo
    from kvledger.sim.fleet.run import MAX_REPLICAS
    from kvledger.sim.fleet.slo_search import Objective, search
    from kvledger.sizing.prices import price_of, price_table

    slo = slo_in.slo()
    check_count("--max-replicas", slo_in.max_replicas, high=MAX_REPLICAS)
    routers, host_tiers, link = slo_in.router_kinds(), slo_in.host_tiers(), slo_in.pd_link()
    if parsed.deployment.attn_dp_size > 1:
        raise ValueError("--enable-dp-attention: a fleet replica is one rank; the search adds "
                         "replicas instead")
    chosen = tuple(gpus) if gpus else (DEFAULT_SLO_GPU,)
    objective = slo_in.chosen_objective()
    prices = None
    if objective is Objective.COST:
        table = price_table(slo_in.gpu_price or ())
        prices = {g: price_of(table, g) for g in chosen}
    if True in host_tiers:
        from kvledger.core.extras import MEMORY

        MEMORY.require("searching the host tier (--host-tier on)")
    sim = slo_in.sim()
    workload = load_inputs(sim)
    words = workload_words(slo_in, rules)
    with RunBar(f"replaying fleets on {workload.name}", console=err_console,
                enabled=progress) as bar:
        result = search(model, parsed.deployment, workload, slo, gpus=chosen,
                        rules=rules, routers=routers, max_replicas=slo_in.max_replicas,
                        objective=objective, prices=prices, host_tiers=host_tiers,
                        runner=runner, observer=bar, config_of=sim.config, link=link)
    notes = ("latency from kvledger's step-time model (`simulate`'s default roofline on "
             "each layout's GPU); every fleet is its own replay",)
    if result.best is not None:
        notes += tuple(result.plans[result.best.candidate.layout].notes)
    doc = slo_json(result, workload_words=words, prices=prices,
                   ignored_flags=parsed.ignored, notes=notes)
    if json:
        emit_json(doc)
    else:
        check_finite(doc)
        render_slo(doc, console)
        for flag in parsed.ignored:
            console.print(f"ignored flag: {flag}", style="yellow", highlight=False)
    return result.best is not None
