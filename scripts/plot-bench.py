#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Plots qconv-bench JSON files (qconv-bench --json FILE).

    scripts/plot-bench.py RUN.json [--out bench.png]
        per-layer GOPS of qconv against its peer (oneDNN), one bar pair per layer
    scripts/plot-bench.py BEFORE.json AFTER.json [--out compare.png]
        the same for both runs, and a table of per-layer time ratios (before / after) on stdout

Needs Debian's python3-matplotlib (install-deps.sh --bench brings it).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    layers = data["layers"] if isinstance(data, dict) else data  # older files: a bare list
    return data.get("context", {}) if isinstance(data, dict) else {}, layers


def label(record):
    return f'{record["network"]}/{record["layer"]}'


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="one or two qconv-bench JSON files")
    parser.add_argument("--out", default="bench.png", help="the PNG to write")
    args = parser.parse_args(argv)
    if len(args.runs) > 2:
        parser.error("one run, or two to compare")
    runs = [load(path) for path in args.runs]

    names = [label(r) for r in runs[0][1]]
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(names)), 5))
    width = 0.8 / (2 * len(runs))
    for i, (context, layers) in enumerate(runs):
        by_name = {label(r): r for r in layers}
        tag = f" ({args.runs[i]})" if len(runs) > 1 else ""
        xs = [k + (2 * i) * width for k in range(len(names))]
        ax.bar(xs, [by_name[n]["gops"] if n in by_name else 0 for n in names], width,
               label=f"qconv{tag}")
        peer = [(by_name[n].get("onednn_gops") or 0) if n in by_name else 0 for n in names]
        if any(peer):
            ax.bar([x + width for x in xs], peer, width, label=f"oneDNN{tag}")
    ax.set_xticks([k + width * (len(runs) - 0.5) for k in range(len(names))])
    ax.set_xticklabels(names, rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("GOPS (2 x MACs / time)")
    context = runs[0][0]
    title = "qconv-bench"
    if context:
        title += f' — {context.get("cpu", "?")}, {context.get("threads", "?")} thread(s), ' \
                 f'batch {context.get("batch", "?")}'
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")

    if len(runs) == 2:
        before = {label(r): r for r in runs[0][1]}
        after = {label(r): r for r in runs[1][1]}
        print(f'{"layer":40} {"before ms":>10} {"after ms":>10} {"before/after":>13}')
        for name in names:
            if name in after:
                b, a = before[name]["ms"], after[name]["ms"]
                print(f"{name:40} {b:10.3f} {a:10.3f} {b / a:13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
