"""The console table, ``report.md`` (and ``results.json``) and a joint plot (PNG, matplotlib's Agg backend) per motion case."""
from __future__ import annotations

import json
import os

from .runner import FAIL, PASS, SKIP


def _first(detail: str) -> str:
    return detail.splitlines()[0] if detail else ""


def table(outcomes: list, width: int = 100) -> str:
    """case | result | detail, one line each, then the counts."""
    w = max([len(o.case) for o in outcomes] + [4])
    lines = [f"{'case':{w}s}  result  detail", f"{'-' * w}  ------  {'-' * 40}"]
    for o in outcomes:
        lines.append(f"{o.case:{w}s}  {o.result:6s}  {_first(o.detail)[:width]}")
    lines.append(summary(outcomes))
    return "\n".join(lines)


def summary(outcomes: list) -> str:
    n = {r: sum(o.result == r for o in outcomes) for r in (PASS, FAIL, SKIP)}
    return f"{n[PASS]} passed, {n[FAIL]} failed, {n[SKIP]} skipped (the robot cannot)"


def plot(outcome, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    p = outcome.plot
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, name in enumerate(p.names):
        line, = ax.plot(p.t, p.q[:, i], label=name)
        for k, (label, q) in enumerate(p.marks.items()):
            ax.axhline(q[i], color=line.get_color(), ls=("--", ":", "-.")[k % 3], lw=0.8)
    ax.set_xlabel("robot time (s)")
    ax.set_ylabel("joint angle (rad)")
    marks = ", ".join(f"{('dashed', 'dotted', 'dash-dot')[k % 3]}: {m}" for k, m in enumerate(p.marks))
    ax.set_title(f"{outcome.case}: {outcome.result}" + (f"  ({marks})" if marks else ""), fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def markdown(outcomes: list, robot_summary: str, cases: dict, plots: dict) -> str:
    """report.md: the robot, the table (case | scripts | result | detail), then each case's detail and plot."""
    out = ["# Intera SDK conformance", "", f"Robot: {robot_summary}", "", summary(outcomes), "",
           "| case | SDK scripts | result | detail |", "|---|---|---|---|"]
    for o in outcomes:
        scripts = ", ".join(cases[o.case].scripts) if o.case in cases else ""
        out.append(f"| {o.case} | {scripts} | {o.result} | {_first(o.detail).replace('|', '/')} |")
    for o in outcomes:
        if o.result == SKIP:
            continue
        out += ["", f"## {o.case}: {o.result}", ""]
        if o.case in cases:
            out += [f"Checks: {cases[o.case].what}.", ""]
        out += [f"{o.robot_s:.1f} s of robot time, {o.wall_s:.1f} s of wall time.", ""]
        if o.result == FAIL or "\n" in o.detail:
            out += ["```", o.detail.rstrip(), "```"]
        else:
            out.append(o.detail)
        if o.case in plots:
            out += ["", f"![{o.case}]({plots[o.case]})"]
    return "\n".join(out) + "\n"


def write(outcomes: list, robot_summary: str, cases: dict, directory: str) -> str:
    """report.md and the plots into ``directory``; the report's path."""
    os.makedirs(directory, exist_ok=True)
    plots = {}
    for o in outcomes:
        if o.plot is not None and len(o.plot.t):
            name = f"{o.case}.png"
            plot(o, os.path.join(directory, name))
            plots[o.case] = name
    path = os.path.join(directory, "report.md")
    with open(path, "w") as f:
        f.write(markdown(outcomes, robot_summary, cases, plots))
    with open(os.path.join(directory, "results.json"), "w") as f:  # (for a test or a CI job to read)
        json.dump({"robot": robot_summary, "cases": [
            {"case": o.case, "result": o.result, "detail": o.detail, "robot_s": round(o.robot_s, 3),
             "wall_s": round(o.wall_s, 3), "plot": plots.get(o.case)} for o in outcomes]}, f, indent=1)
    return path


def per_backend(results: dict) -> str:
    """The README's table: one row per case, one column per backend ({backend: results.json's "cases"}); a SKIP
    shows its reason, a FAIL its first line."""
    backends = list(results)
    names = []
    for cases in results.values():
        names += [c["case"] for c in cases if c["case"] not in names]
    rows = ["| case | " + " | ".join(backends) + " |", "|---|" + "---|" * len(backends)]
    for name in names:
        cells = []
        for b in backends:
            c = next((c for c in results[b] if c["case"] == name), None)
            if c is None:
                cells.append("")
            elif c["result"] == PASS:
                cells.append("pass")
            else:
                cells.append(f"{c['result'].lower()}: {_first(c['detail']).replace('|', '/')}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
