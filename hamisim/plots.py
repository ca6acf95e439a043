"""Figures of a run (PNG, matplotlib's Agg backend, no display needed)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_run", "plot_compare", "plot_fill_curves"]

_PNG = {"dpi": 130, "metadata": {"Software": None}}


def _time_axis(ts: pd.DataFrame, fill: bool) -> tuple[np.ndarray, str]:
    if fill:
        cap = ts["hami_gpu_total"].iloc[0]
        return 100.0 * ts["gpu_arrived"].to_numpy() / cap, "arrived workload (% of GPU capacity)"
    t = ts["time"].to_numpy()
    span = t[-1] - t[0] if len(t) else 0
    if span > 3 * 86400:
        return t / 86400, "time (days)"
    if span > 3 * 3600:
        return t / 3600, "time (hours)"
    return t, "time (s)"


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, **_PNG)
    plt.close(fig)
    return path


def plot_run(ts: pd.DataFrame, occupancy: np.ndarray | None, folder: Path, fill: bool,
             title: str = "") -> list[Path]:
    """Utilisation and fragmentation, pending pods, card occupancy, fill curve."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    x, xlabel = _time_axis(ts, fill)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.plot(x, 100 * ts["hami_gpu_allocated"] / ts["hami_gpu_total"], label="cards with a tenant")
    ax.plot(x, 100 * ts["hami_gpu_core_allocated_ratio"], label="cores allocated")
    ax.plot(x, 100 * ts["hami_gpu_memory_allocated_bytes"] / ts["hami_gpu_memory_total_bytes"],
            label="memory allocated")
    ax.plot(x, ts["frag_pct_of_capacity"], label="fragmentation (% of capacity)", ls="--")
    ax.set(xlabel=xlabel, ylabel="% of cluster GPU", ylim=(0, 100),
           title=title or "GPU utilisation and fragmentation")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    out.append(_save(fig, folder / "utilisation.png"))

    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.step(x, ts["pods_pending"], where="post", color="tab:red")
    ax.set(xlabel=xlabel, ylabel="pending pods", title="Pods waiting to be scheduled")
    ax.grid(alpha=0.3)
    out.append(_save(fig, folder / "pending.png"))

    if occupancy is not None and occupancy.size:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        im = ax.imshow(occupancy.T, aspect="auto", interpolation="nearest", cmap="viridis",
                       vmin=0, vmax=1)
        ax.set(xlabel="node (cluster order)", ylabel="card (registration order)",
               title="Card allocation at peak (largest used share of slots, cores, memory)")
        fig.colorbar(im, ax=ax, fraction=0.04)
        out.append(_save(fig, folder / "occupancy.png"))

    if fill:
        fig, ax = plt.subplots(figsize=(6, 4.5))
        unalloc = 100 * ts["unallocated_gpu"] / ts["hami_gpu_total"]
        ax.plot(x, unalloc, label="unallocated GPU")
        ax.plot([0, 100, x.max() if len(x) else 100], [100, 0, 0], color="grey", ls=":",
                label="ideal")
        ax.set(xlabel=xlabel, ylabel="unallocated GPU (%)", ylim=(0, 100),
               title="Unallocated GPU as the workload arrives")
        ax.grid(alpha=0.3)
        ax.legend()
        out.append(_save(fig, folder / "fill.png"))
    return out


def _styles(labels: Sequence[str]) -> dict[str, dict]:
    """Colour per card policy, line style per node policy, for ``node=X card=Y`` labels."""
    parts = [dict(p.split("=", 1) for p in lab.split() if "=" in p) for lab in labels]
    cards = list(dict.fromkeys(p.get("card", lab) for p, lab in zip(parts, labels)))
    nodes = list(dict.fromkeys(p.get("node", "") for p in parts))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    dashes = ["-", "--", ":", "-."]
    return {lab: {"color": colours[cards.index(p.get("card", lab)) % len(colours)],
                  "ls": dashes[nodes.index(p.get("node", "")) % len(dashes)]}
            for p, lab in zip(parts, labels)}


def plot_compare(series: Mapping[str, Sequence[pd.DataFrame]], path: Path, fill: bool) -> Path:
    """One overlay plot: per policy the median over seeds with a 25-75 % band.

    In fill mode the x-axis is the arrived workload (integer percent bins) and
    the y-axis unallocated GPU %, zoomed on where the policies part; in replay
    mode, time and cards with a tenant. Colour = card policy, line style =
    node policy.
    """
    fig, ax = plt.subplots(figsize=(8, 5))
    styles = _styles(list(series))
    for label, frames in series.items():
        curves = []
        for ts in frames:
            x, xlabel = _time_axis(ts, fill)
            if fill:
                y = 100 * ts["unallocated_gpu"].to_numpy() / ts["hami_gpu_total"].iloc[0]
                grid = np.arange(0, int(np.floor(x.max())) + 1) if len(x) else np.arange(1)
            else:
                y = 100 * ts["hami_gpu_allocated"].to_numpy() / ts["hami_gpu_total"].iloc[0]
                grid = np.linspace(x.min(), x.max(), 200) if len(x) else np.arange(1)
            curves.append((grid, np.interp(grid, x, y)))
        n = min(len(g) for g, _ in curves)
        grid = curves[0][0][:n]
        ys = np.array([y[:n] for _, y in curves])
        med = np.median(ys, axis=0)
        ax.plot(grid, med, label=label, lw=1.8, **styles[label])
        if len(curves) > 1:
            ax.fill_between(grid, np.percentile(ys, 25, axis=0), np.percentile(ys, 75, axis=0),
                            color=styles[label]["color"], alpha=0.15, lw=0)
    if fill:
        top = ax.get_xlim()[1]
        ax.plot([0, 100, top], [100, 0, 0], color="black", lw=0.8, ls=":", label="ideal")
        lows = [ln.get_ydata()[-1] for ln in ax.get_lines()[:-1]]
        ax.set(xlabel="arrived workload (% of GPU capacity)", ylabel="unallocated GPU (%)",
               xlim=(50, top), ylim=(0, max(50.0, 1.3 * max(lows, default=0))))
        ax.set_title("Unallocated GPU vs arrived workload\n(median over seeds, 25–75 % band)")
    else:
        ax.set(xlabel=xlabel, ylabel="cards with a tenant (%)", ylim=(0, 100))
        ax.set_title("GPU allocation over time (median over seeds, 25–75 % band)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", title="colour: card policy, style: node policy",
              title_fontsize=8)
    return _save(fig, path)


def plot_fill_curves(curves: pd.DataFrame, path: Path, xlim=(50, 130),
                     reference: pd.DataFrame | None = None, title: str = "") -> Path:
    """Figure 9(a) of the FGD paper: median unallocated GPU % per policy over
    seeds, with a 25-75 % band and the ideal line.

    ``reference`` (index: arrived percent, columns: policy) adds published
    medians as markers in each policy's colour.
    """
    fig, ax = plt.subplots(figsize=(8, 5.2))
    labels = list(dict.fromkeys(curves["policy"]))
    styles = _styles(labels)
    top = 0.0
    for policy in labels:
        g = curves[curves["policy"] == policy]
        piv = g.pivot_table(index="arrived_pct", columns="seed", values="unallocated_gpu_pct")
        med = piv.median(axis=1)
        ax.plot(med.index, med.values, label=policy, lw=1.8, **styles[policy])
        if piv.shape[1] > 1:
            ax.fill_between(piv.index, piv.quantile(0.25, axis=1), piv.quantile(0.75, axis=1),
                            color=styles[policy]["color"], alpha=0.15, lw=0)
        top = max(top, float(med[med.index >= xlim[0]].max()) if len(med) else 0.0)
        if reference is not None and policy in reference.columns:
            ref = reference[policy].dropna()
            ref = ref[(ref.index >= xlim[0]) & (ref.index % 5 == 0)]
            ax.plot(ref.index, ref.values, "o", ms=4, mfc="none",
                    color=styles[policy]["color"])
    ax.plot([0, 100, 200], [100, 0, 0], color="black", lw=0.8, ls=":", label="ideal")
    if reference is not None:
        ax.plot([], [], "o", ms=4, mfc="none", color="grey", label="published (FGD artifact)")
    ax.set(xlabel="arrived workload (% of GPU capacity)", ylabel="unallocated GPU (%)",
           xlim=xlim, ylim=(0, max(min(top * 1.15, 100 - xlim[0] + 5), 10)))
    ax.set_title(title or "Unallocated GPU vs arrived workload\n"
                 "(median over seeds, 25–75 % band)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", ncol=1 if len(labels) < 8 else 2)
    return _save(fig, path)
