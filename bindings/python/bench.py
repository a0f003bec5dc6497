#!/usr/bin/env python3
"""Policy.decide from Python against cedarpy on the same decisions.

    .e2e/pyvenv/bin/pip install cedarpy==4.12.2
    .e2e/pyvenv/bin/python bindings/python/bench.py

Not part of CI (timings need a quiet machine). A policy of 100 rules (50
denies, 50 allows, a server each, a glob on the tool) and the Cedar policy
an expert would write for it: one forbid or permit per rule, `like` on the
tool name in the context, parsed once (`PolicySet.from_str`) with a parsed
empty entity set, so neither side pays for parsing per call. Both decide
the same requests and must agree on every one before any time is taken.
The engine's own time per decision (criterion, `cargo bench --bench
decide`) is in docs/performance.md; the difference is what crossing from
Python costs.
"""

import os
import random
import statistics
import sys
import time

import mcppol

SERVERS = 50
RUNS = 5
PER_RUN = 20_000


def mcppol_policy():
    lines = ["policy bench {", "  default deny"]
    for i in range(SERVERS):
        lines.append(f'  deny "svc{i}/delete_*"')
    for i in range(SERVERS):
        lines.append(f'  allow "svc{i}/get_*"')
    lines.append("}")
    return "\n".join(lines)


def cedar_policy():
    out = []
    for i in range(SERVERS):
        out.append(
            f'forbid(principal, action == Action::"call", resource) '
            f'when {{ context.server == "svc{i}" && context.tool like "delete_*" }};'
        )
    for i in range(SERVERS):
        out.append(
            f'permit(principal, action == Action::"call", resource) '
            f'when {{ context.server == "svc{i}" && context.tool like "get_*" }};'
        )
    return "\n".join(out)


def requests(n, seed=7):
    rng = random.Random(seed)
    verbs = ["get", "delete", "create", "list"]
    out = []
    for _ in range(n):
        server = f"svc{rng.randrange(SERVERS + 10)}"
        tool = f"{rng.choice(verbs)}_{rng.choice(['user', 'repo', 'issue'])}"
        out.append((server, tool))
    return out


def per_call_ns(fn, items):
    """The median over RUNS of the time per call, in nanoseconds."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter_ns()
        for item in items:
            fn(item)
        times.append((time.perf_counter_ns() - start) / len(items))
    return statistics.median(times)


def main():
    try:
        import cedarpy
    except ImportError:
        sys.exit("cedarpy is missing: .e2e/pyvenv/bin/pip install cedarpy==4.12.2")
    policy = mcppol.Policy.from_str(mcppol_policy())
    cedar = cedarpy.PolicySet.from_str(cedar_policy())
    entities = cedarpy.Entities.from_json_str("[]")
    items = requests(PER_RUN)

    def cedar_request(item):
        server, tool = item
        return {
            "principal": 'User::"agent"',
            "action": 'Action::"call"',
            "resource": f'Tool::"{server}/{tool}"',
            "context": {"server": server, "tool": tool},
        }

    cedar_items = [cedar_request(i) for i in items]
    mcppol_items = [f"{s}/{t}" for s, t in items]
    for target, request in zip(mcppol_items[:2000], cedar_items[:2000]):
        ours = policy.decide(target).allowed
        theirs = cedarpy.is_authorized(request, cedar, entities).allowed
        assert ours == theirs, f"{target}: mcppol {ours}, cedar {theirs}"

    floor = per_call_ns(lambda t: policy.is_visible("svc1", t), mcppol_items)
    ours = per_call_ns(policy.decide, mcppol_items)
    with_args = per_call_ns(lambda t: policy.decide(t, args={"id": 1}, taint=["web"]), mcppol_items)
    # cedarpy takes about a millisecond a call: a tenth of the requests.
    theirs = per_call_ns(lambda r: cedarpy.is_authorized(r, cedar, entities), cedar_items[: PER_RUN // 10])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}, mcppol {mcppol.__version__}, load average {load:.1f}")
    print(f"100 rules, {PER_RUN} decisions a run ({PER_RUN // 10} for cedarpy), median of {RUNS} runs, per decision:")
    print(f"  mcppol Policy.decide(tool)                  {ours:8.0f} ns")
    print(f"  mcppol Policy.decide(tool, args, taint)     {with_args:8.0f} ns")
    print(f"  cedarpy is_authorized (parsed policies)     {theirs:8.0f} ns")
    print(f"  a native call that does no deciding         {floor:8.0f} ns")
    print(f"  mcppol ahead of cedarpy by                  {theirs / ours:8.1f}x")
    print("  the engine alone (docs/performance.md)     50 to 80 ns")


if __name__ == "__main__":
    main()
