#!/usr/bin/env python3
"""Plots docs/perf/performance.png from the benchmark data.

Inputs (CSV, committed next to this script):
  compare.csv    written by `mcppol-compare --csv docs/perf/compare.csv`
  criterion.csv  mcppol's criterion medians; refreshed from criterion's own
                 output when --criterion DIR is given (DIR is the `criterion`
                 folder under the cargo target dir, e.g. target/compare/criterion)

Usage: python3 docs/perf/plot.py [--criterion target/compare/criterion]
Needs matplotlib (`pip install matplotlib`).
"""

import argparse
import csv
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["deny", "ask", "allow", "default", "mix"]


def read_criterion(root):
    """Median point estimates (ns) of decide/<kind>/<rules> and load/<rules>."""
    rows = []
    for group, names in (("decide", KINDS), ("load", [None])):
        for name in names:
            base = os.path.join(root, group, name) if name else os.path.join(root, group)
            if not os.path.isdir(base):
                continue
            for size in os.listdir(base):
                est = os.path.join(base, size, "new", "estimates.json")
                if not size.isdigit() or not os.path.exists(est):
                    continue
                with open(est) as f:
                    e = json.load(f)
                m = e["median"]
                rows.append(
                    {
                        "bench": f"{group}/{name}" if name else group,
                        "rules": int(size),
                        "median_ns": round(m["point_estimate"], 1),
                        "low_ns": round(m["confidence_interval"]["lower_bound"], 1),
                        "high_ns": round(m["confidence_interval"]["upper_bound"], 1),
                    }
                )
    rows.sort(key=lambda r: (r["bench"], r["rules"]))
    return rows


def load_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--criterion", help="criterion output folder to refresh criterion.csv from")
    ap.add_argument("--out", default=os.path.join(HERE, "performance.png"))
    args = ap.parse_args()

    crit_csv = os.path.join(HERE, "criterion.csv")
    if args.criterion:
        rows = read_criterion(args.criterion)
        with open(crit_csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["bench", "rules", "median_ns", "low_ns", "high_ns"])
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {crit_csv} ({len(rows)} rows)")

    cmp_rows = load_csv(os.path.join(HERE, "compare.csv"))
    crit_rows = load_csv(crit_csv)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.2))

    # Left: decision latency per rule count, the three engines. Cedar and
    # regorus set up per server (the headline, solid), and flat (one set for
    # all rules, faint dashed); older CSVs without per-server columns plot
    # the flat figures only.
    per_server = False
    if cmp_rows:
        rules = [int(r["rules"]) for r in cmp_rows]
        per_server = "cedar_ps_ns" in cmp_rows[0]
        series = [("mcppol", "mcppol_ns", "#1b7837", "o", "-", 1.0)]
        if per_server:
            series += [
                ("Cedar, per server (engine only)", "cedar_ps_ns", "#2166ac", "s", "-", 1.0),
                ("regorus, per server (engine only)", "regorus_ps_ns", "#b2182b", "^", "-", 1.0),
                ("Cedar, per server (incl. input prep)", "cedar_ps_e2e_ns", "#2166ac", "s", ":", 1.0),
                ("regorus, per server (incl. input prep)", "regorus_ps_e2e_ns", "#b2182b", "^", ":",
                 1.0),
                ("Cedar, flat: one set for all rules", "cedar_ns", "#2166ac", "s", "--", 0.35),
                ("regorus, flat: one set for all rules", "regorus_ns", "#b2182b", "^", "--", 0.35),
            ]
        else:
            series += [
                ("Cedar (engine only)", "cedar_ns", "#2166ac", "s", "-", 1.0),
                ("regorus (engine only)", "regorus_ns", "#b2182b", "^", "-", 1.0),
                ("Cedar (incl. input prep)", "cedar_e2e_ns", "#2166ac", "s", ":", 1.0),
                ("regorus (incl. input prep)", "regorus_e2e_ns", "#b2182b", "^", ":", 1.0),
            ]
        for label, key, color, marker, style, alpha in series:
            ys = [float(r[key]) / 1000.0 for r in cmp_rows]
            ax1.plot(rules, ys, style, color=color, marker=marker, label=label, alpha=alpha)
        cedar_key, rego_key = ("cedar_ps_ns", "regorus_ps_ns") if per_server else (
            "cedar_ns", "regorus_ns")
        for r in cmp_rows:
            x = int(r["rules"])
            m = float(r["mcppol_ns"])
            ratio = min(float(r[cedar_key]), float(r[rego_key])) / m
            ax1.annotate(
                f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x",
                (x, m / 1000.0),
                textcoords="offset points",
                xytext=(0, 9),
                ha="center",
                fontsize=8,
                color="#1b7837",
            )
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_ylim(bottom=0.1)
    ax1.set_xlabel("rules in the policy")
    ax1.set_ylabel("median time per decision (µs, log)")
    ax1.set_title("Decision latency (same requests, answers checked equal)\n"
                  "green labels: mcppol's lead over the faster of the two"
                  + (", set up per server" if per_server else ""), fontsize=10)
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7, loc="upper left")

    # Right: mcppol per request kind (criterion) and load time.
    by_bench = {}
    for r in crit_rows:
        by_bench.setdefault(r["bench"], []).append((int(r["rules"]), float(r["median_ns"])))
    colors = {"deny": "#d73027", "ask": "#fc8d59", "allow": "#1a9850", "default": "#4575b4",
              "mix": "#000000"}
    for kind in KINDS:
        pts = sorted(by_bench.get(f"decide/{kind}", []))
        if pts:
            ax2.plot([p[0] for p in pts], [p[1] for p in pts], "-o", color=colors[kind],
                     label=f"decide: {kind}", markersize=4)
    ax2.set_xscale("log")
    ax2.set_xlabel("rules in the policy")
    ax2.set_ylabel("mcppol median time per decision (ns)")
    ax2.set_ylim(bottom=0)
    ax2.grid(True, which="both", alpha=0.3)
    ax2.set_title("mcppol by request kind (criterion), and load time", fontsize=10)
    load = sorted(by_bench.get("load", []))
    if not load and cmp_rows:
        load = [(int(r["rules"]), float(r["load_mcppol_ms"]) * 1e6) for r in cmp_rows]
    if load:
        ax3 = ax2.twinx()
        ax3.plot([p[0] for p in load], [p[1] / 1e6 for p in load], "--s", color="#762a83",
                 label="load (right axis)", markersize=4)
        ax3.axhline(50, color="#762a83", alpha=0.4, linewidth=1)
        ax3.annotate("50 ms target", (load[0][0], 50), textcoords="offset points",
                     xytext=(2, 3), fontsize=8, color="#762a83")
        ax3.set_yscale("log")
        ax3.set_ylabel("load: parse + compile (ms, log)")
        h1, l1 = ax2.get_legend_handles_labels()
        h2, l2 = ax3.get_legend_handles_labels()
        ax2.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    else:
        ax2.legend(fontsize=8, loc="upper left")

    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
