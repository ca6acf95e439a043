"""``report.html``: one self-contained page per results folder, for people to read.

:func:`write_report` reads a folder written by ``hamisim run``, ``compare``,
``sweep`` or ``plan`` and writes ``report.html`` beside its tables: what was
simulated (cluster, workload, policies, seed, version, input hashes), the
headline figures, every figure of the folder embedded (base64 PNG: the page
needs no other file and no network) with a sentence that says what it shows
and how to read it, and the per-class and per-group tables, or for a
comparison, sweep or plan its table and answer. The page depends only on the
folder's files, so the same results give byte-identical pages.
"""
from __future__ import annotations

import base64
import html
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from hamisim.io.outputs import read_table

__all__ = ["write_report", "report_html", "FIGURE_NOTES", "folder_kind", "notebook_html",
           "validation_html"]

#: what each figure shows and how to read it (the sentence under it)
FIGURE_NOTES: dict[str, str] = {
    "utilisation.png": "Share of the cluster's GPUs with at least one tenant, and of their "
    "cores and memory allocated, over time; the dashed red line is GPU stranded by placement "
    "(free GPU the workload's typical pods could use on an empty node but not as cards are "
    "used now), the dotted line GPU no typical pod can use at all. Higher solid lines and "
    "lower dashed ones are better.",
    "pending.png": "Pods waiting to be scheduled over time. A line that returns to zero means "
    "the cluster keeps up; one that climbs means demand outruns what the policies can place.",
    "occupancy.png": "Every card at the moment the most cards had a tenant: one row per node "
    "(grouped by node group), one cell per card, coloured by the share of the card allocated. "
    "Pale cells in busy rows are capacity left on partly used cards.",
    "groups.png": "The utilisation figure per node group: which hardware is busy, which waits "
    "or strands capacity.",
    "mig.png": "MIG cards: the share of their slices (placement slots) covered by instances, "
    "and of free slices stranded by geometry (no free placement large enough for a typical "
    "pod covers them), per card type.",
    "fill.png": "The FGD paper's fill protocol: GPU left unallocated as the workload arrives; "
    "the dotted diagonal is a perfect packer. The lower the curve beyond 100 %, the better.",
    "compare.png": "The policies side by side over time (utilisation, stranded GPU, pending "
    "pods), or in fill mode the unallocated-GPU curves: read the gap between lines.",
    "placement.png": "Multi-GPU pods by pod size: the share placed across NUMA nodes and their "
    "mean pair score (HAMi's topology score), per card policy. Lower cross-NUMA shares and "
    "higher pair scores mean better-placed training pods.",
    "sweep.png": "Each cell of the sweep: the headline measures against the swept axes.",
    "plan.png": "The plan's search: the target measure against the node count, each evaluated "
    "size's seeds, the target line and the answer (the fewest nodes that meet it).",
}

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:72rem;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.2rem .5rem;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
figure{margin:1.5rem 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.9rem;color:#444;max-width:60rem}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem;font-size:.9rem}
dt{font-weight:600}dd{margin:0;word-break:break-all}.note{color:#555;font-size:.9rem}
"""


def folder_kind(folder: Path) -> str:
    """``run``, ``compare``, ``sweep`` or ``plan`` (ValueError for anything else)."""
    if (folder / "plan.json").exists():
        return "plan"
    if (folder / "sweep.json").exists():
        return "sweep"
    if any((folder / f"compare.{ext}").exists() for ext in ("parquet", "csv")):
        return "compare"
    if (folder / "summary.json").exists():
        return "run"
    if (folder / "validation.json").exists():
        return "validate"
    raise ValueError(f"{folder}: not a results folder of hamisim run, compare, sweep, plan "
                     "or validate (no summary.json, compare table, sweep.json, plan.json or "
                     "validation.json)")


def write_report(folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/report.html`` (replaced atomically) and return its path."""
    folder = Path(folder)
    text = report_html(folder)
    tmp = folder / f".report.html.{os.getpid()}"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, folder / "report.html")
    return folder / "report.html"


def report_html(folder: str | os.PathLike[str]) -> str:
    """The report of ``folder`` as a string (see :func:`write_report`)."""
    folder = Path(folder)
    kind = folder_kind(folder)
    title, body = _RENDER[kind](folder)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>{_e(title)}</h1>\n{body}\n</body></html>\n")


# ---------------------------------------------------------------------------
# pieces

def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _number(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v).lower()
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:,.2f}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _table(df: pd.DataFrame, caption: str = "") -> str:
    if df is None or not len(df):
        return ""
    head = "".join(f"<th>{_e(c)}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(f"<td>{_e(_number(v))}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False, name=None))
    cap = f"<caption class=\"note\">{_e(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>\n"


def _facts(items: Sequence[tuple[str, Any]]) -> str:
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items
                            if v not in (None, "")) + "</dl>\n"


def _figures(folder: Path) -> str:
    figs = folder / "figures"
    if not figs.is_dir():
        return ""
    out = []
    for path in sorted(figs.glob("*.png"), key=lambda p: (list(FIGURE_NOTES).index(p.name)
                                                         if p.name in FIGURE_NOTES else 99,
                                                         p.name)):
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        note = FIGURE_NOTES.get(path.name, "")
        out.append(f"<figure><img alt=\"{_e(path.stem)}\" src=\"data:image/png;base64,{data}\">"
                   f"<figcaption>{_e(note)}</figcaption></figure>")
    return "<h2>Figures</h2>\n" + "\n".join(out) + "\n" if out else ""


def _scalars(results: Mapping[str, Any], keys: Sequence[str] | None = None) -> pd.DataFrame:
    items = [(k, v) for k, v in results.items() if not isinstance(v, (dict, list))
             and (keys is None or k in keys)]
    return pd.DataFrame(items, columns=["measure", "value"], dtype=object)


def _table_file(folder: Path, name: str) -> pd.DataFrame | None:
    for ext in ("parquet", "csv"):
        if (folder / f"{name}.{ext}").exists():
            return read_table(folder / f"{name}.{ext}")
    return None


def notebook_html(title: str, table: pd.DataFrame | None, figure: Path | None) -> str:
    """A study's result in a notebook (``_repr_html_``): its title, figure and table."""
    img = ""
    if figure is not None and Path(figure).exists():
        data = base64.b64encode(Path(figure).read_bytes()).decode("ascii")
        img = f'<img style="max-width:100%" src="data:image/png;base64,{data}">'
    rows = _table(table) if table is not None else ""
    return f"<div><strong>{_e(title)}</strong>{img}{rows}</div>"


# ---------------------------------------------------------------------------
# kinds

def _run(folder: Path) -> tuple[str, str]:
    s = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    r = s.get("results", {})
    inputs = s.get("inputs", {})
    title = f"hamisim run: {s.get('label', '')}"
    parts = ["<h2>What was simulated</h2>", _facts([
        ("cluster", s.get("cluster", {}).get("description")),
        ("workload", s.get("workload", {}).get("description")),
        ("policies", s.get("label")),
        ("not HAMi behaviour", "; ".join(s.get("not_hami") or []) or None),
        ("mode", inputs.get("mode")), ("seed", inputs.get("seed")),
        ("timing", inputs.get("timing")), ("backend", inputs.get("backend")),
        ("engine", engine_label(inputs)),
        ("kube-scheduler", s.get("scheduler", {}).get("kube_scheduler_version")),
        ("hamisim", s.get("hamisim_version")),
        ("cluster file sha256", inputs.get("cluster_sha256")),
        ("trace sha256", inputs.get("trace_sha256")),
    ])]
    groups = pd.DataFrame(r.get("groups", []))
    if len(groups):
        parts += ["<h2>Node groups</h2>", _table(groups)]
    parts += ["<h2>Headline figures</h2>", _table(_scalars(r))]
    if r.get("mig_by_card_type"):
        mig = pd.DataFrame([{"card type": k, **v} for k, v in r["mig_by_card_type"].items()])
        parts += ["<h2>MIG cards</h2>", _table(mig)]
    parts.append(_figures(folder))
    classes = pd.DataFrame(r.get("classes", []))
    if len(classes):
        parts += ["<h2>By pod class</h2>", _table(classes)]
    return title, "\n".join(parts)


def engine_label(inputs: dict) -> str | None:
    """The engine that ran a replay (summary.json's ``inputs.engine``), and for
    the Python one why (``inputs.engine_reason``); ``None`` for a results folder
    from before hamisim named it. The console says the same."""
    engine = inputs.get("engine")
    if not engine:
        return None
    if engine == "compiled":
        return "compiled (hamisim._core)"
    reason = inputs.get("engine_reason")
    return f"{engine} ({reason})" if reason else engine


def _compare(folder: Path) -> tuple[str, str]:
    table = _table_file(folder, "compare")
    classes = _table_file(folder, "compare_classes")
    groups = _table_file(folder, "compare_groups")
    parts = ["<h2>The comparison</h2>",
             "<p class=\"note\">One row per policy and seed; each run's own folder, when kept, "
             "is under runs/.</p>", _table(table), _figures(folder)]
    if classes is not None and len(classes):
        parts += ["<h2>By pod class</h2>", _table(classes)]
    if groups is not None and len(groups):
        parts += ["<h2>By node group</h2>", _table(groups)]
    return "hamisim compare", "\n".join(parts)


def _sweep(folder: Path) -> tuple[str, str]:
    manifest = json.loads((folder / "sweep.json").read_text(encoding="utf-8"))
    table = _table_file(folder, "results")
    parts = ["<h2>What was swept</h2>", _facts([
        ("sweep file", manifest.get("sweep_file")), ("cells", manifest.get("cells")),
        ("sweep file sha256", manifest.get("sweep_sha256")),
        ("hamisim", manifest.get("hamisim_version"))]),
        "<h2>Results</h2>",
        "<p class=\"note\">One row per cell; a failed cell says why in its error column.</p>",
        _table(table), _figures(folder)]
    return "hamisim sweep", "\n".join(parts)


def _plan(folder: Path) -> tuple[str, str]:
    plan = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
    answer = plan.get("answer")
    said = (f"{answer} nodes of group {plan.get('group')} meet {plan.get('target')}"
            if answer is not None else f"no size in the range meets {plan.get('target')}")
    parts = ["<h2>The answer</h2>", f"<p><strong>{_e(said)}</strong>"
             + (" (exact)" if plan.get("exact") else "") + "</p>",
             _facts([("cluster", plan.get("cluster")), ("policy", plan.get("policy")),
                     ("aggregate", plan.get("aggregate")), ("seeds", plan.get("seeds")),
                     ("evaluations", plan.get("evaluations")), ("note", plan.get("note"))]),
             "<h2>The search</h2>", _table(_table_file(folder, "curve")), _figures(folder)]
    return "hamisim plan", "\n".join(parts)


def _validate_section(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                      max_rows: int = 200) -> str:
    """``hamisim validate``'s section: agreement figures, outcomes, skips and the
    first ``max_rows`` disagreements."""
    outcomes = summary.get("node_outcomes", {})
    parts = ["<h2>Validation against the audit log</h2>", _facts([
        ("pods compared", _number(summary.get("pods_compared"))),
        ("node agreement", f"{_number(summary.get('node_agreement_pct'))} %"),
        ("... with every node examined", f"{_number(summary.get('node_agreement_all_nodes_pct'))} %"),
        ("card agreement", f"{_number(summary.get('card_agreement_pct'))} %"),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in outcomes.items())),
        ("bound in the log, unschedulable for hamisim", summary.get("bound_but_unschedulable")),
        ("kept pending while hamisim would bind", summary.get("pending_but_schedulable")),
        ("log", f"{summary.get('log', {}).get('first')} .. {summary.get('log', {}).get('last')}"),
    ])]
    skipped = summary.get("skipped") or {}
    if skipped:
        parts += ["<h2>Pods skipped</h2>", _table(pd.DataFrame(
            sorted(skipped.items()), columns=["reason", "pods"]))]
    if rows:
        cols = ["pod", "time", "node_outcome", "cards_agree", "recorded_node", "hamisim_node",
                "recorded_node_score", "hamisim_node_score", "reason"]
        parts += ["<h2>Disagreements</h2>", _table(pd.DataFrame(
            [{c: r.get(c) for c in cols} for r in rows[:max_rows]], columns=cols),
            f"{len(rows)} in disagreements.csv" + (f", the first {max_rows} here"
                                                   if len(rows) > max_rows else ""))]
    return "\n".join(parts)


def validation_html(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The whole ``report.html`` of a ``hamisim validate`` folder."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>hamisim validate</title><style>{_CSS}</style></head><body>\n"
            f"<h1>hamisim validate</h1>\n{_validate_section(summary, rows)}\n</body></html>\n")


def _validate(folder: Path) -> tuple[str, str]:
    summary = json.loads((folder / "validation.json").read_text(encoding="utf-8"))
    rows: list[dict] = []
    if (folder / "disagreements.csv").exists():
        rows = pd.read_csv(folder / "disagreements.csv", dtype=str,
                           keep_default_na=False).to_dict("records")
    return "hamisim validate", _validate_section(summary, rows)


_RENDER: dict[str, Callable[[Path], tuple[str, str]]] = {
    "run": _run, "compare": _compare, "sweep": _sweep, "plan": _plan, "validate": _validate}
