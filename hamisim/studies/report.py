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

from hamisim.io.outputs import atomic_file, read_table
from hamisim.hami.quirks import quirk_lines

__all__ = ["write_report", "report_html", "FIGURE_NOTES", "folder_kind", "notebook_html",
           "validation_html", "placement_words"]

#: what each figure shows and how to read it (the sentence under it)
FIGURE_NOTES: dict[str, str] = {
    "utilisation.png": "Share of the cluster's GPUs with at least one tenant, and of their "
    "cores and memory allocated, over time; the dashed red line is GPU stranded by placement "
    "(free GPU the workload's typical pods could use on an empty node but not as cards are "
    "used now), the dotted line GPU no typical pod can use at all. Each line holds its value "
    "until the next change and ends where the run ends (the last pod left). Cards with a "
    "tenant above cores and memory means cards shared thinly: spreading pods occupies more "
    "cards for the same work, so a higher line is not more work done; cores and memory "
    "allocated are the work placed. Less stranded GPU means placement wastes less.",
    "pending.png": "Pods waiting to be scheduled over time, to the run's end. A line that "
    "returns to zero means the cluster keeps up; one that climbs means demand outruns what "
    "the policies can place.",
    "occupancy.png": "Every card at the moment the most cards had a tenant: one row per node "
    "(grouped by node group), one cell per card, coloured by the share of the card allocated. "
    "Pale cells in busy rows are capacity left on partly used cards.",
    "groups.png": "The utilisation figure per node group, each as % of the group's own "
    "GPUs, on the run's time axis: which hardware is busy, which stands idle or strands "
    "capacity.",
    "mig.png": "MIG cards: the share of their slices (placement slots) covered by instances, "
    "and of free slices stranded by geometry (no free placement large enough for a typical "
    "pod covers them), per card type.",
    "families.png": "A cluster of several device families: per family, the share of its "
    "cards with a tenant and of its own memory and cores allocated over time, each in the "
    "family's units (NPU, DCU and GPU memory are never added together; AMD's cores are "
    "Compute Units). Which accelerators are busy, which stand idle.",
    "fill.png": "The FGD paper's fill protocol: GPU left unallocated as the workload arrives; "
    "the dotted diagonal is a perfect packer. The lower the curve beyond 100 %, the better.",
    "compare.png": "The policies side by side over time on the same pods: cards with a "
    "tenant, stranded GPU and pending pods (or in fill mode the unallocated-GPU curves). "
    "Cards with a tenant: spread occupies more cards for the same pods; it is not more work "
    "done, and a lower line leaves more whole cards free. Less stranded GPU and fewer "
    "pending pods are better.",
    "placement.png": "Multi-GPU pods by pod size: the share placed across NUMA nodes (CPU "
    "sockets) and their mean pair score (HAMi's topology score: NVLink links count most), "
    "per policy, beside each policy's p99 pending time. Lower cross-NUMA shares and higher "
    "pair scores mean better-linked training pods; weigh them against the wait.",
    "sweep.png": "Each cell of the sweep: the headline measures against the swept axes.",
    "plan.png": "The plan's search: the target measure against the node count, each evaluated "
    "size's seeds, the target line and the answer (the fewest nodes that meet it); over several "
    "node groups, the sizes simulated (first two groups as axes, each labelled with its cost), "
    "green where every target was met, red where one was missed, the answer starred.",
}

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:72rem;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc}
.wide{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.2rem .45rem;text-align:right}
th{background:#f3f3f3;vertical-align:bottom;font-weight:600;min-width:3.5rem;max-width:8rem}
td{white-space:nowrap}td:first-child,th:first-child{text-align:left}
td.text{text-align:left;white-space:normal;min-width:12rem}
ul.headline{padding-left:1.2rem;font-size:.95rem}ul.headline li{margin:.15rem 0}
details{margin:.5rem 0;font-size:.9rem}summary{cursor:pointer;color:#444}
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
    with atomic_file(folder / "report.html") as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
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


def _table(df: pd.DataFrame, caption: str = "", readable: bool = False,
           order: bool = False) -> str:
    """``df`` as an HTML table; ``readable``: the identifying columns first, short
    headers, in a box that scrolls sideways rather than widening the page, and
    with ``order`` the measures in reading order too (:func:`_readable`; for
    tables whose columns come alphabetically from summary.json)."""
    if df is None or not len(df):
        return ""
    keys = list(df.columns)
    if readable:
        df, keys = _readable(df, order)
    head = "".join(f"<th title=\"{_e(k)}\">{_e(c)}</th>" if readable and k != c
                   else f"<th>{_e(c)}</th>" for k, c in zip(keys, df.columns))
    # words (reasons, pod names) read from the left and may wrap; numbers align right
    cell = ["<td class=\"text\">" if i and _is_text(df.iloc[:, i]) else "<td>"
            for i in range(df.shape[1])]
    rows = "".join("<tr>" + "".join(f"{cell[i]}{_e(_number(v))}</td>"
                                    for i, v in enumerate(row)) + "</tr>"
                   for row in df.itertuples(index=False, name=None))
    cap = f"<caption class=\"note\">{_e(caption)}</caption>" if caption else ""
    table = f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    return f"<div class=\"wide\">{table}</div>\n" if readable else table + "\n"


def _is_text(column: pd.Series) -> bool:
    """A column of words: not numbers, not booleans, with a value longer than a
    short label (a short one, such as a policy name, stays on one line)."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return False
    return bool(column.astype(str).str.len().max() > 24)


#: the columns that say what a row is, first in a table, in this order
_IDENTIFYING = ("cell", "policy", "seed", "group", "class", "family", "vendor", "card_types",
                "card type", "card_type", "node")
#: the measures in reading order (counts, waits, allocation, placement); a
#: table's other columns follow in their own order
_READING_ORDER = (
    "nodes", "gpus", "cards", "memory_mib", "cores", "cores_unit", "replicas", "pods",
    "pods_bound", "bound", "departed", "abandoned",
    "abandoned_pct", "unplaced_pct", "pending_at_end", "running_at_end", "attempts",
    "peak_gpu_allocated", "peak_gpu_allocated_pct", "mean_gpu_allocated_pct",
    "mean_cards_allocated_pct",
    "mean_memory_allocated_pct", "mean_cores_allocated_pct",
    "mean_frag_pct_of_capacity", "mean_stranded_pct_of_capacity", "mean_stranded_pct_of_gpus",
    "mean_unfit_pct_of_capacity", "mean_unfit_pct_of_gpus", "final_unallocated_gpu_pct",
    "pending_p50_s", "pending_p99_s", "pending_max_s", "queueing_delay_p50_s",
    "queueing_delay_p99_s", "queueing_delay_max_s", "multi_gpu_pods", "cross_numa_pct",
    "cross_switch_pct", "pairs_without_nvlink_pct", "mean_pair_score", "mean_min_pair_score",
    "mig_slots_total", "mig_slots_used_mean_pct", "mig_slots_used_peak",
    "mig_slots_stranded_mean_pct", "end_time_s")
#: short headers for the tables' columns (the key is the header's tooltip)
_HEADERS = {
    "gpus": "GPUs", "gpu": "GPUs", "card_type": "card type", "pods_bound": "pods bound",
    "abandoned_pct": "abandoned %", "unplaced_pct": "unplaced %",
    "pending_at_end": "pending at end", "running_at_end": "running at end",
    "pending_p50_s": "pending p50 (s)", "pending_p99_s": "pending p99 (s)",
    "pending_max_s": "pending max (s)", "queueing_delay_p50_s": "queueing delay p50 (s)",
    "queueing_delay_p99_s": "queueing delay p99 (s)",
    "queueing_delay_max_s": "queueing delay max (s)",
    "peak_gpu_allocated": "peak GPUs with a tenant",
    "peak_gpu_allocated_pct": "peak GPUs with a tenant %",
    "mean_gpu_allocated_pct": "GPUs with a tenant, mean %",
    "mean_cards_allocated_pct": "cards with a tenant, mean %",
    "mean_frag_pct_of_capacity": "fragmented, mean % of GPUs",
    "mean_stranded_pct_of_capacity": "stranded, mean % of GPUs",
    "mean_stranded_pct_of_gpus": "stranded, mean % of GPUs",
    "mean_unfit_pct_of_capacity": "unfit, mean % of GPUs",
    "mean_unfit_pct_of_gpus": "unfit, mean % of GPUs",
    "final_unallocated_gpu_pct": "unallocated at end %", "multi_gpu_pods": "multi-GPU pods",
    "cross_numa_pct": "across NUMA %", "cross_switch_pct": "across PCIe switches %",
    "pairs_without_nvlink_pct": "card pairs without NVLink %",
    "mean_pair_score": "mean pair score", "mean_min_pair_score": "mean min pair score",
    "gpus_nic_other_numa_pct": "cards with the NIC on another NUMA node %",
    "gpus_nic_other_switch_pct": "cards with the NIC on another PCIe switch %",
    "mig_slots_total": "MIG slices", "mig_slots_used_mean_pct": "MIG slices used, mean %",
    "mig_slots_used_peak": "MIG slices used, peak",
    "mig_slots_stranded_mean_pct": "MIG slices stranded, mean %",
    "end_time_s": "simulated time (s)",
    "card_types": "card types", "memory_mib": "memory (MiB)", "cores_unit": "cores in",
    "mean_memory_allocated_pct": "memory allocated, mean %",
    "mean_cores_allocated_pct": "cores allocated, mean %",
}


def _readable(df: pd.DataFrame, order: bool) -> tuple[pd.DataFrame, list[str]]:
    """``df`` with its identifying columns first, with ``order`` its measures in
    reading order, short headers, and percentages and seconds to one decimal;
    and the column keys (the table's field names) in the new order."""
    known = {c: i for i, c in enumerate(_READING_ORDER)}
    ident = [c for c in _IDENTIFYING if c in df.columns]
    rest = [c for c in df.columns if c not in ident]
    if order:
        rest = sorted(rest, key=lambda c: (c not in known, known.get(c, 0), rest.index(c)))
    keys = ident + rest
    out = df[keys].copy()
    for c in keys:
        if ("_pct" in c or c.endswith("_s")) and pd.api.types.is_float_dtype(out[c]):
            out[c] = [("" if pd.isna(v) else f"{v:,.1f}") for v in out[c]]
    out.columns = [_HEADERS.get(c, c.replace("_", " ")) for c in keys]
    return out, keys


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
        ("kube-scheduler", s.get("scheduler", {}).get("kube_scheduler_version")),
        ("hamisim", s.get("hamisim_version")),
        ("cluster file sha256", inputs.get("cluster_sha256")),
        ("trace sha256", inputs.get("trace_sha256")),
    ])]
    parts += ["<h2>Headline figures</h2>", _headline(s), _quirks(r),
              "<details><summary>Every figure of summary.json, by its name</summary>",
              _table(_scalars(r)), "</details>"]
    groups = pd.DataFrame(r.get("groups", []))
    if len(groups):
        parts += ["<h2>Node groups</h2>", _table(groups, readable=True, order=True)]
    families = pd.DataFrame(r.get("families", []))
    if len(families):
        families["card_types"] = families["card_types"].map(", ".join)
        families = families.rename(columns={"mean_gpu_allocated_pct": "mean_cards_allocated_pct"})
        parts += ["<h2>Device families</h2>",
                  "<p>Each family in its own units: memory in MiB of its own cards, cores "
                  "in percent of a card (AMD: Compute Units), over the headline's span.</p>",
                  _table(families, readable=True, order=True)]
    parts.append(_unplaceable(r))
    parts.append(_refusals(r))
    if r.get("mig_by_card_type"):
        mig = pd.DataFrame([{"card type": k, **v} for k, v in r["mig_by_card_type"].items()])
        parts += ["<h2>MIG cards</h2>", _table(mig, readable=True, order=True)]
    parts.append(_figures(folder))
    classes = pd.DataFrame(r.get("classes", []))
    if len(classes):
        parts += ["<h2>By pod class</h2>", _table(classes, readable=True, order=True)]
    return title, "\n".join(parts)


def _duration(seconds: float | None) -> str:
    """``3 h 5 min``, ``12 min 5 s``, ``42 s``, ``0.4 s``; ``none`` when there is
    no figure (``None``: e.g. percentiles over no placeable pod)."""
    if seconds is None or seconds != seconds:
        return "none"
    seconds = float(seconds)
    if seconds < 10 and not seconds.is_integer():
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s" if whole % 60 else f"{whole // 60} min"
    return f"{whole // 3600:,} h {whole % 3600 // 60} min"


def _pct(value: float | None, digits: int = 1) -> str:
    if value is None or value != value:
        return "none"
    return f"{value:,.{digits}f} %"


def _headline(summary: Mapping[str, Any]) -> str:
    """A run's headline figures in words, with their units."""
    r = summary.get("results", {})
    gpus = summary.get("cluster", {}).get("gpus")
    items: list[tuple[str, str]] = _window_items(r)
    if "mean_gpu_allocated_pct" in r:
        text = f"mean {_pct(r['mean_gpu_allocated_pct'])}"
        if "peak_gpu_allocated" in r:
            text += f", peak {r['peak_gpu_allocated']:,}" + (f" of {gpus:,}" if gpus else "") \
                + " GPUs"
            if "peak_time_s" in r:
                text += f" (first at {_duration(r['peak_time_s'])})"
        items.append(("GPU allocated (cards with a tenant)", text))
    if "pods" in r:
        text = (f"{r['pods']:,} arrived, {r.get('bound', 0):,} bound, "
                f"{r.get('departed', 0):,} departed, {r.get('abandoned', 0):,} abandoned, "
                f"{r.get('pending_at_end', 0):,} still pending at the end")
        extra = [f"{r[k]:,} {what}" for k, what in (
            ("initial_pods", "running from the initial state"),
            ("preempted", "preempted by kube-scheduler"),
            ("rejected", "refused by HAMi's admission webhook")) if r.get(k)]
        items.append(("Pods", text + (f" ({'; '.join(extra)})" if extra else "")))
    if r.get("unplaceable"):
        items.append(("Unplaceable (no node holds them even empty)",
                      f"{r['unplaceable']:,} pods, the cause of "
                      f"{r.get('unplaceable_preemptions', 0):,} preemptions; left out of the "
                      "times below (section Unplaceable pods)"))
    if "pending_p50_s" in r:
        items.append(("Time pending (every placeable pod: arrival to bind, abandonment or "
                      "the end)" if r.get("unplaceable") else
                      "Time pending (every pod: arrival to bind, abandonment or the end)",
                      f"median {_duration(r['pending_p50_s'])}, 99th percentile "
                      f"{_duration(r['pending_p99_s'])}, longest {_duration(r['pending_max_s'])}"))
    if "queueing_delay_p99_s" in r:
        items.append(("Queueing delay of bound pods",
                      f"99th percentile {_duration(r['queueing_delay_p99_s'])}, longest "
                      f"{_duration(r['queueing_delay_max_s'])}"))
    if "attempts" in r:
        per = f" ({r['attempts'] / r['pods']:,.2f} per pod)" if r.get("pods") else ""
        items.append(("Scheduling attempts", f"{r['attempts']:,}{per}"))
    if "mean_frag_pct_of_capacity" in r:
        items.append(("Fragmentation (free GPU the typical pods cannot use)",
                      f"mean {_pct(r['mean_frag_pct_of_capacity'], 2)} of GPU capacity: "
                      f"{_pct(r.get('mean_stranded_pct_of_capacity', 0), 2)} stranded by "
                      f"placement, {_pct(r.get('mean_unfit_pct_of_capacity', 0), 2)} unfit "
                      "even on an empty node"))
    if "final_unallocated_gpu_pct" in r:
        items.append(("At the end", f"{r.get('running_at_end', 0):,} pods running, "
                      f"{_pct(r['final_unallocated_gpu_pct'])} of GPU capacity unallocated"))
    if r.get("multi_gpu_pods"):
        items.append(("Multi-GPU pods", f"{r['multi_gpu_pods']:,} placed, "
                      + ", ".join(placement_words(r))))
    if r.get("mig_slots_total"):
        items.append(("MIG slices in use",
                      f"mean {_pct(r['mig_slots_used_mean_pct'])} of {r['mig_slots_total']:,}"
                      f" (peak {r.get('mig_slots_used_peak', 0):,}), "
                      f"{_pct(r.get('mig_slots_stranded_mean_pct', 0))} stranded by geometry"))
    if r.get("defrag_moves"):
        items.append(("Defragmenter (what-if, not HAMi)", f"{r['defrag_moves']:,} moves"))
    if "end_time_s" in r:
        items.append(("Simulated time", _duration(r["end_time_s"])))
    engine = engine_label(summary.get("inputs", {}))
    if engine:
        items.append(("Engine", engine))
    return ("<ul class=\"headline\">" + "".join(f"<li><strong>{_e(k)}</strong>: {_e(v)}</li>"
                                                for k, v in items) + "</ul>\n")


def _window_items(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Which span the headline figures below cover (summary.json's ``window``) and
    the drain after it, first in the list: the console says the same."""
    w = r.get("window")
    if not w:
        return []
    what = ("the trace's span, first to last arrival" if w.get("from") == "trace"
            else "--window")
    text = (f"{_duration(w['start_s'])} to {_duration(w['end_s'])} ({what}; "
            f"{w.get('pods', 0):,} pods arriving in it)")
    whole = (r.get("whole_run") or {}).get("mean_gpu_allocated_pct")
    if whole is not None:
        text += f"; over the whole run {_pct(whole)} of the GPUs had a tenant"
    drain = r.get("drain") or {}
    if drain.get("length_s"):
        text += f"; the drain after it lasted {_duration(drain['length_s'])}"
        if drain.get("mean_gpu_allocated_pct") is not None:
            text += f", {_pct(drain['mean_gpu_allocated_pct'])} with a tenant"
    return [("Headline figures cover", text)]


def placement_words(r: Mapping[str, Any]) -> list[str]:
    """A summary's multi-GPU placement figures in words, those the cluster describes,
    worded for its topology (the console and report.html say the same).

    Crossing PCIe switches slows GPU-GPU traffic only between cards without NVLink:
    where every card pair has NVLink (NVSwitch nodes such as a DGX), the share of pods
    across switches is a fact of the layout (one switch per GPU), not a fault, and
    is not reported; elsewhere it is said beside the share of pairs it concerns."""
    parts = [f"{r['cross_numa_pct']:.1f} % across NUMA nodes"] if "cross_numa_pct" in r else []
    unlinked = r.get("pairs_without_nvlink_pct")
    if unlinked is not None and unlinked == 0:
        parts.append("every card pair on NVLink (PCIe switches carry none of their GPU-GPU "
                     "traffic)")
    else:
        if "cross_switch_pct" in r:
            parts.append(f"{r['cross_switch_pct']:.1f} % across PCIe switches")
        if unlinked is not None:
            parts.append(f"{unlinked:.1f} % of card pairs without NVLink")
    if "gpus_nic_other_numa_pct" in r:
        parts.append(f"{r['gpus_nic_other_numa_pct']:.1f} % of cards with the NIC on another "
                     "NUMA node")
    if "mean_pair_score" in r:
        parts.append(f"mean pair score {r['mean_pair_score']:,.0f}")
    return parts


def engine_label(inputs: dict) -> str | None:
    """The engine that ran a replay (summary.json's ``inputs.engine``), and for
    the Python one why (``inputs.engine_reason``); ``None`` for a results folder
    from before hamisim named it. The console says the same."""
    engine = inputs.get("engine")
    if not engine:
        return None
    if engine == "compiled":
        return "compiled (hamisim._replay)"
    reason = inputs.get("engine_reason")
    return f"{engine} ({reason})" if reason else engine


def _compare(folder: Path) -> tuple[str, str]:
    table = _table_file(folder, "compare")
    classes = _table_file(folder, "compare_classes")
    groups = _table_file(folder, "compare_groups")
    parts = ["<h2>The comparison</h2>",
             "<p class=\"note\">One row per policy and seed; each run's own folder, when kept, "
             "is under runs/.</p>", _compare_tables(table), _figures(folder)]
    parts.append(_compare_unplaceable(folder))
    if classes is not None and len(classes):
        parts += ["<h2>By pod class</h2>", _table(classes, readable=True, order=True)]
    if groups is not None and len(groups):
        parts += ["<h2>By node group</h2>", _table(groups, readable=True, order=True)]
    return "hamisim compare", "\n".join(parts)


#: a comparison's headline columns, in this order after policy and seed: what a
#: planner reads first (waits, then cards with a tenant), in a table that fits a
#: 1,280 px window
_COMPARE_HEADLINE = ("pending_p50_s", "pending_p99_s", "mean_gpu_allocated_pct",
                     "mean_stranded_pct_of_capacity", "bound", "abandoned", "pending_at_end",
                     "pending_max_s")
#: a comparison's multi-GPU placement columns, a table of their own
_COMPARE_PLACEMENT = ("multi_gpu_pods", "cross_numa_pct", "cross_switch_pct",
                      "pairs_without_nvlink_pct", "mean_pair_score", "mean_min_pair_score",
                      "gpus_nic_other_numa_pct", "gpus_nic_other_switch_pct")


def _compare_tables(table: pd.DataFrame | None) -> str:
    """A comparison's table split so that a 1,280 px window shows what matters
    without scrolling: the headline columns (waits, cards with a tenant) first, the
    multi-GPU placement apart (worded for the topology, see :func:`placement_words`),
    then every figure of each run, in a box that scrolls sideways."""
    if table is None or not len(table):
        return ""
    ident = [c for c in _IDENTIFYING if c in table.columns]
    head = [c for c in _COMPARE_HEADLINE if c in table.columns]
    out = []
    if head:
        out.append(_table(table[ident + head], readable=True))
    placed = [c for c in _COMPARE_PLACEMENT if c in table.columns]
    if "multi_gpu_pods" in placed and table["multi_gpu_pods"].fillna(0).gt(0).any():
        note = "Multi-GPU pods: where their cards sit inside the machine."
        unlinked = table.get("pairs_without_nvlink_pct")
        if unlinked is not None and unlinked.notna().all() and unlinked.eq(0).all():
            placed = [c for c in placed if c != "cross_switch_pct"]
            table = table.drop(columns="cross_switch_pct", errors="ignore")
            note += (" Every card pair of every run is joined by NVLink (NVSwitch or direct), "
                     "so crossing PCIe switches carries none of their GPU-GPU traffic: that "
                     "share is left out here and below.")
        out.append(f"<p class=\"note\">{_e(note)}</p>")
        out.append(_table(table[ident + placed], readable=True))
    if head or len(out) > 1:
        out.append("<p class=\"note\">Every figure of each run, by policy and seed:</p>")
    out.append(_table(table, readable=True, order=True))
    return "".join(out)


def _quirks(r: Mapping[str, Any]) -> str:
    """HAMi v2.10's quirks that moved the run, in numbers (summary.json
    ``hami_quirks``, :func:`hamisim.hami.quirks.quirk_lines`); empty when none did."""
    lines = quirk_lines(r.get("hami_quirks"))
    if not lines:
        return ""
    items: list[str] = []
    for line in lines:
        if line.startswith("  ") and items:
            items[-1] += "<br>" + _e(line.strip())
        else:
            items.append(_e(line))
    return ("<h2>HAMi quirks that moved this run</h2>\n<p class=\"note\">HAMi v2.10's own "
            "behaviour, reproduced on purpose; the figures above include its effect "
            "(summary.json: results.hami_quirks).</p>\n<ul>"
            + "".join(f"<li>{x}</li>" for x in items) + "</ul>")


def _refusals(r: Mapping[str, Any]) -> str:
    """Per namespace, the creations HAMi's webhook refused for the quota and what
    became of the pods (summary.json's ``quota_refusals``); empty when none was."""
    rows = r.get("quota_refusals") or []
    if not rows:
        return ""
    table = pd.DataFrame([{
        "namespace": x["namespace"], "creations refused": x["refused_creations"],
        "pods refused": x["pods_refused"], "bare pods, never created": x["never_created"],
        "controllers' pods created later": x["created_later"],
        "deleted before created": x["deleted_before_created"],
        "still waiting at the end": x["waiting_at_end"]} for x in rows])
    return ("<h2>Refused by the quota webhook</h2>\n<p class=\"note\">HAMi's admission "
            "webhook refuses to create a pod whose namespace's ResourceQuota is used up. A bare "
            "pod is then never created; a ReplicaSet's or Job's pod is created again at its "
            "controller's next sync (its rate limiter's delay, or one of its pods leaving), "
            "not when the quota frees up. Controllers' pods count here from their arrival "
            "when refused or behind a refused pod of the same controller.</p>\n"
            + _table(table, readable=True))


def _unplaceable(r: Mapping[str, Any], preemptions: str | None = None) -> str:
    """The pods no node could hold even empty, by reason (summary.json's
    ``unplaceable_reasons``); empty when there are none. ``preemptions`` replaces
    the run's count of the preemptions they caused."""
    reasons = r.get("unplaceable_reasons") or []
    if not reasons:
        return ""
    table = pd.DataFrame([{"pods": x["pods"], "reason": x["reason"],
                           "for example": ", ".join(x["examples"])} for x in reasons])
    if preemptions is None:
        preemptions = (f"{_number(r.get('unplaceable_preemptions', 0))} of "
                       f"{_number(r.get('preempted', 0))} preemptions")
    return ("<h2>Unplaceable pods</h2>\n<p class=\"note\">"
            f"{_number(r.get('unplaceable', 0))} pods no node of the cluster could hold even "
            f"empty. They queue, fail and preempt as they would in the cluster ({preemptions}), "
            "but are left out of the pending percentiles and the per-class table (pods table: "
            "column unplaceable).</p>\n" + _table(table, readable=True))


def _compare_unplaceable(folder: Path) -> str:
    """A comparison's unplaceable pods: the same pods under every policy, listed
    once from its first run's summary."""
    runs = sorted((folder / "runs").glob("*/summary.json")) if (folder / "runs").is_dir() \
        else []
    if not runs:
        return ""
    r = json.loads(runs[0].read_text(encoding="utf-8")).get("results", {})
    return _unplaceable(r, "the table above counts the preemptions they caused, per run")


def _sweep(folder: Path) -> tuple[str, str]:
    manifest = json.loads((folder / "sweep.json").read_text(encoding="utf-8"))
    table = _table_file(folder, "results")
    parts = ["<h2>What was swept</h2>", _facts([
        ("sweep file", manifest.get("sweep_file")), ("cells", manifest.get("cells")),
        ("sweep file sha256", manifest.get("sweep_sha256")),
        ("hamisim", manifest.get("hamisim_version"))]),
        "<h2>Results</h2>",
        "<p class=\"note\">One row per cell; a failed cell says why in its error column.</p>",
        _table(table, readable=True), _figures(folder)]
    return "hamisim sweep", "\n".join(parts)


def _plan(folder: Path) -> tuple[str, str]:
    plan = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
    answer = plan.get("answer")
    said = (f"{answer} nodes of group {plan.get('group')} meet {plan.get('target')}"
            if answer is not None else f"no size in the range meets {plan.get('target')}")
    if "groups" in plan:
        said = _multi_plan_answer(plan)
    parts = ["<h2>The answer</h2>", f"<p><strong>{_e(said)}</strong>"
             + (" (exact)" if plan.get("exact") else "") + "</p>",
             _facts([("cluster", plan.get("cluster")), ("policy", plan.get("policy")),
                     ("aggregate", plan.get("aggregate")), ("seeds", plan.get("seeds")),
                     ("evaluations", plan.get("evaluations")), ("note", plan.get("note"))]),
             "<h2>The search</h2>", _table(_table_file(folder, "curve"), readable=True),
             _figures(folder)]
    return "hamisim plan", "\n".join(parts)


def _multi_plan_answer(plan: dict) -> str:
    """A plan over several node groups (plan.json ``groups``): the sizes and their
    cost, each group's binding target, the pods no varied group serves."""
    targets = " and ".join(plan.get("targets") or [])
    answer = plan.get("answer")
    if not answer:
        return f"no sizes in the ranges meet {targets}"
    sizes = ", ".join(f"{n} {g}" for g, n in answer.items())
    binding = "; ".join(f"{g}: one node fewer misses {', '.join(b)}" if b else
                        f"{g}: at the bottom of its range"
                        for g, b in (plan.get("binding") or {}).items())
    un = (plan.get("unservable") or {}).get("pods")
    return (f"{sizes} nodes (cost {plan.get('cost'):g}) meet {targets}. {binding}."
            + (f" {un} pods fit no node of the varied groups even empty." if un else ""))


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
    ] + ([("MIG instance agreement", f"{_number(summary.get('mig_agreement_pct'))} % of "
           f"{_number(summary.get('mig_compared'))} pods on MIG cards")]
         if summary.get("mig_compared") else []) + [
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
        cols = ["pod", "time", "node_outcome", "cards_agree"] + (
            ["mig_agree"] if summary.get("mig_compared") else []) + [
            "recorded_node", "hamisim_node"] + (
            ["nominated_node"] if any(r.get("nominated_node") for r in rows) else []) + [
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
