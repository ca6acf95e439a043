"""Figures of a run (PNG, matplotlib's Agg backend, no display needed)."""
from __future__ import annotations

import functools
import textwrap
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Sequence

from typing import TYPE_CHECKING

import numpy as np

from hamisim.devices import family

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["plot_run", "run_figures", "draw", "FigureJob", "plot_compare", "plot_fill_curves",
           "plot_placement"]

_PNG = {"dpi": 130, "metadata": {"Software": None}}


@functools.cache
def _pyplot():
    """matplotlib's pyplot on the Agg backend, imported on first use: a process that
    only builds figure jobs (``hamisim run`` hands them to worker processes whose
    fork server loaded matplotlib while the run went) never pays for it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot
    return matplotlib.pyplot


def __getattr__(name: str):
    if name == "plt":                   # ``from hamisim.plots import plt``: pyplot, loaded
        return _pyplot()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _time_axis(ts: pd.DataFrame | Columns, fill: bool) -> tuple[np.ndarray, str]:
    if fill:
        cap = np.asarray(ts["hami_gpu_total"])[0]
        return (100.0 * np.asarray(ts["gpu_arrived"]) / cap,
                "arrived workload (% of GPU capacity)")
    t = np.asarray(ts["time"])
    unit, label = _time_unit(t[-1] - t[0] if len(t) else 0)
    return t / unit, label


def _keep(x: np.ndarray, y: np.ndarray, bins: int) -> np.ndarray:
    """The rows of the step function ``(x, y)`` (``x`` sorted) that :func:`_thin`
    keeps: per time bin (``bins`` equal slices of ``[x[0], x[-1]]``) its first and
    last row and the rows of its lowest and highest value."""
    n = len(x)
    width = (x[-1] - x[0]) / bins
    if n <= 4 * bins or not width > 0:
        return np.arange(n)
    b = np.minimum(((x - x[0]) / width).astype(np.int64), bins - 1)
    firsts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    lasts = np.r_[firsts[1:] - 1, n - 1]
    # rows by bin, then by value (stable: the earliest lowest, the latest highest;
    # NaN sorts last), so each bin's block starts at its minimum and ends at its maximum
    order = np.lexsort((y, b))
    return np.unique(np.concatenate([firsts, lasts, order[firsts], order[lasts]]))


def _thin(x, y, bins: int = 1200, end: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A step function (``y[i]`` holds from ``x[i]`` to ``x[i + 1]``; draw it with
    ``where="post"``) in at most ``4 * bins`` points that draw like all of it.

    Bins are slices of *time* (of ``x``), not of rows: a long run has millions of
    rows crowded where pods arrive and a few in the drain, and each of those few
    must stay where it happened. Per bin the first and last row and those of its
    lowest and highest value are kept, each at its own time: every value drawn is
    one the series took, spikes stay visible, and a value held across bins is drawn
    exactly (between a bin's last row and the next bin's first nothing changed).
    ``end`` (the run's end, when later than the last row) extends the last value
    to it, so the line stops where the run stopped. A figure is ~1,200 pixels wide.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if end is not None and len(x) and end > x[-1]:
        x, y = np.append(x, end), np.append(y, y[-1])
    if not len(x):
        return x, y
    keep = _keep(x, y, bins)
    return x[keep], y[keep]


def _time_unit(span: float) -> tuple[float, str]:
    """Seconds per unit of a time axis over ``span`` seconds, and its label."""
    if span > 3 * 86400:
        return 86400.0, "time (days)"
    if span > 3 * 3600:
        return 3600.0, "time (hours)"
    return 1.0, "time (s)"


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, **_PNG)
    _pyplot().close(fig)
    return path


#: what the fragmentation lines mean, under every figure that shows them
FRAGMENTATION_NOTE = (
    "Fragmentation (FGD, Weng et al. ATC '23) is free GPU that the workload's typical pod "
    "shapes cannot use, split in two. Stranded: they could use it on an empty node, but not "
    "as the cards are used now - fragmentation caused by placement. Unfit: they cannot use it "
    "even on an empty node (GPU type, memory, card count) - a mismatch between workload and "
    "hardware, present on an idle cluster too. FGD's figure is their sum.")


#: how to read the utilisation lines, under the run's utilisation figure
UTILISATION_NOTE = (
    "Cards with a tenant is not work done: spreading pods occupies more cards for the same "
    "pods, so read cores and memory allocated for the work placed; the gap above them is "
    "cards shared thinly. Each line holds its value until the next change and ends where "
    "the run ends.")


def _caption(fig, text: str, lines: int) -> tuple[float, float, float, float]:
    """Write ``text`` under the axes; returns the rect that tight_layout may fill."""
    artist = fig.text(0.01, 0.01, text, fontsize=7.5, wrap=True, va="bottom", ha="left",
                      color="0.25")
    # matplotlib wraps at draw time; this finds its very line breaks with a few
    # measurements per line instead of one per word (each costs ~0.3 ms)
    artist._get_wrapped_text = functools.partial(_wrapped_text, artist)
    height = fig.get_figheight()            # a caption line is about 0.15 in
    return (0, (0.15 * lines + 0.12) / height, 1, 1)


def _wrapped_text(artist) -> str:
    """What matplotlib's ``Text._get_wrapped_text`` returns for ``artist``.

    matplotlib measures ``words[:i]`` for i = 2, 3, ... until the line is too wide,
    one text layout per word; a long caption took ~0.3 s a figure. The width grows
    with every word, so the first too-wide ``i`` is the same when found from a
    guess (the characters that fit at the widths measured so far) by stepping to
    it: two or three measurements a line. Falls back to matplotlib's own wrapping
    where its internals differ from those this relies on.
    """
    if not artist.get_wrap() or artist.get_usetex():
        return artist.get_text()
    try:
        limit = artist._get_wrap_line_width()
        width_of = artist._get_rendered_text_width
        px_per_char = artist.get_fontsize() * artist.get_figure(root=True).dpi / 72 * 0.5
    except AttributeError:                          # pragma: no cover - another matplotlib
        return type(artist)._get_wrapped_text(artist)
    widths: dict[str, int] = {}

    def too_wide(words: list[str], i: int) -> bool:
        nonlocal px_per_char
        line = " ".join(words[:i])
        if line not in widths:
            widths[line] = width_of(line)
            px_per_char = max(widths[line], 1) / max(len(line), 1)
        return widths[line] > limit

    lines = []
    for paragraph in artist.get_text().split("\n"):   # the user's line breaks stay
        words = paragraph.split(" ")
        while words:
            n = len(words)
            if n == 1:
                lines.append(words.pop())
                continue
            # the guess: the most words whose characters fit at the current width
            chars, i = len(words[0]), 1
            while i < n and (chars + 1 + len(words[i])) * px_per_char <= limit:
                chars += 1 + len(words[i])
                i += 1
            i = min(max(i, 2), n)
            if too_wide(words, i):                  # step down to the first too-wide i
                while i > 2 and too_wide(words, i - 1):
                    i -= 1
                cut = i - 1
            else:                                   # step up past the last that fits
                while i < n and not too_wide(words, i + 1):
                    i += 1
                cut = i
            lines.append(" ".join(words[:cut]))
            words = words[cut:]
    return "\n".join(lines)


def _save_with(fig, path: Path, rect) -> Path:
    fig.tight_layout(rect=rect)
    fig.savefig(path, **_PNG)
    _pyplot().close(fig)
    return path


def _title(main: str, context: str, width: int = 105) -> str:
    """``main`` over the context lines, each wrapped to ``width`` characters."""
    lines = [main] + [w for line in context.splitlines()
                      for w in textwrap.wrap(line, width, subsequent_indent="  ")]
    return "\n".join(lines)


#: the columns of a table a figure reads, as numpy arrays (``Series.to_numpy()``)
Columns = Mapping[str, np.ndarray]


class FigureJob(NamedTuple):
    """One figure of a run, to draw with :func:`draw`: ``fn(*args)`` saves it and
    returns its path (or ``None`` when there is nothing to show). ``weight`` is its
    rough relative cost, so a pool can start the dearest first. The arguments hold
    only the columns the figure reads, as numpy arrays: a job pickles small, and a
    worker drawing it needs numpy and matplotlib, not pandas."""

    name: str
    weight: int
    fn: Callable[..., Path | None]
    args: tuple


def draw(job: FigureJob) -> Path | None:
    """Draw and save one figure (in this process or a pool worker)."""
    return job.fn(*job.args)


def run_figures(ts: pd.DataFrame, occupancy: np.ndarray | None, folder: Path, fill: bool,
                title: str = "", *, context: str = "", peak: tuple[float, int] | None = None,
                groups_ts: pd.DataFrame | None = None,
                group_runs: Sequence[tuple[int, str]] | None = None,
                mig_ts: pd.DataFrame | None = None,
                family_ts: pd.DataFrame | None = None) -> list[FigureJob]:
    """The figures :func:`plot_run` draws, as jobs in its order (arguments as there).
    ``folder`` is created; the jobs only write their own files into it, so they may
    run in any order or side by side and give the same files."""
    folder.mkdir(parents=True, exist_ok=True)
    axis = ["time"] + (["hami_gpu_total", "gpu_arrived"] if fill else [])
    jobs = [FigureJob("utilisation.png", 4, _plot_utilisation,
                      (_columns(ts, axis + list(_UTILISATION_COLUMNS)),
                       folder / "utilisation.png", fill, title, context)),
            FigureJob("pending.png", 2, _plot_pending,
                      (_columns(ts, axis + ["pods_pending"]), folder / "pending.png", fill,
                       title, context))]
    if occupancy is not None and occupancy.size:
        jobs.append(FigureJob("occupancy.png", 3, _plot_occupancy,
                              (occupancy, folder / "occupancy.png", title, context, peak,
                               group_runs, fill)))
    if groups_ts is not None and len(groups_ts):
        jobs.append(FigureJob("groups.png", 8, _plot_groups,
                              (_split(groups_ts, "group", _GROUP_COLUMNS), _columns(ts, axis),
                               folder / "groups.png", fill, title, context)))
    if mig_ts is not None and len(mig_ts) and not fill:
        jobs.append(FigureJob("mig.png", 3, _plot_mig,
                              (_split(mig_ts, "card_type", _MIG_COLUMNS), _columns(ts, ["time"]),
                               folder / "mig.png", title, context)))
    if family_ts is not None and len(family_ts) and not fill:
        jobs.append(FigureJob("families.png", 4, _plot_families,
                              (_split(family_ts, "family", _FAMILY_COLUMNS),
                               _columns(ts, ["time"]), folder / "families.png", title,
                               context)))
    if fill:
        jobs.append(FigureJob("fill.png", 2, _plot_fill,
                              (_columns(ts, axis + ["unallocated_gpu"]), folder / "fill.png",
                               title, context)))
    return jobs


def plot_run(ts: pd.DataFrame, occupancy: np.ndarray | None, folder: Path, fill: bool,
             title: str = "", *, context: str = "", peak: tuple[float, int] | None = None,
             groups_ts: pd.DataFrame | None = None,
             group_runs: Sequence[tuple[int, str]] | None = None,
             mig_ts: pd.DataFrame | None = None,
             family_ts: pd.DataFrame | None = None) -> list[Path]:
    """The figures of one run: utilisation and fragmentation, pending pods, card
    occupancy at the peak, per-group utilisation (several groups) and the fill curve,
    drawn one after the other in this process (:func:`run_figures` gives them as jobs).

    ``title`` names the policies, ``context`` the workload and cluster (one line);
    ``peak`` is (time s, cards with a tenant) of the occupancy snapshot;
    ``group_runs`` the first row of each group's block in ``occupancy``, whose nodes are
    ordered by group; ``family_ts`` the per-family series of a cluster of several
    device families (:func:`hamisim.sim.families.family_timeseries`).
    """
    jobs = run_figures(ts, occupancy, folder, fill, title, context=context, peak=peak,
                       groups_ts=groups_ts, group_runs=group_runs, mig_ts=mig_ts,
                       family_ts=family_ts)
    return [p for p in map(draw, jobs) if p is not None]


#: the time-series columns the utilisation figure reads (those present)
_UTILISATION_COLUMNS = ("hami_gpu_allocated", "hami_gpu_total", "hami_gpu_core_allocated_ratio",
                        "hami_gpu_memory_allocated_bytes", "hami_gpu_memory_total_bytes",
                        "stranded_pct_of_capacity", "unfit_gpu", "frag_pct_of_capacity")


_GROUP_COLUMNS = ("time", "hami_gpu_total", "hami_gpu_allocated_pct",
                  "hami_gpu_memory_allocated_bytes", "hami_gpu_memory_total_bytes",
                  "stranded_gpu", "unfit_gpu")
_MIG_COLUMNS = ("time", "mig_slots_total", "mig_slots_used", "mig_slots_stranded")
_FAMILY_COLUMNS = ("time", "cards", "cards_with_tenant_pct", "memory_allocated_pct",
                   "cores_allocated_pct")


def _columns(ts: pd.DataFrame, names: Sequence[str]) -> Columns:
    """``names`` of ``ts`` (once each, those present) as numpy arrays: what a job pickles."""
    return {c: ts[c].to_numpy() for c in dict.fromkeys(names) if c in ts}


def _split(table: pd.DataFrame, key: str, names: Sequence[str]) -> list[tuple[str, Columns]]:
    """Per value of ``key``, in order of first appearance, its rows' ``names``."""
    return [(value, _columns(rows, names)) for value, rows in table.groupby(key, sort=False)]


def _plot_utilisation(ts: Columns, path: Path, fill: bool, title: str,
                      context: str) -> Path:
    x, xlabel = _time_axis(ts, fill)
    head = title or "GPU utilisation and fragmentation"
    fig, ax = _pyplot().subplots(figsize=(9, 5.4))
    # drawn last of the three: where memory or cores are as allocated, it stays visible
    ax.step(*_thin(x, 100 * ts["hami_gpu_allocated"] / ts["hami_gpu_total"]),
            where="post", label="cards with a tenant", zorder=3)
    ax.step(*_thin(x, 100 * ts["hami_gpu_core_allocated_ratio"]), where="post",
            label="cores allocated")
    ax.step(*_thin(x, 100 * ts["hami_gpu_memory_allocated_bytes"]
                   / ts["hami_gpu_memory_total_bytes"]), where="post", label="memory allocated")
    if "stranded_pct_of_capacity" in ts:
        ax.step(*_thin(x, ts["stranded_pct_of_capacity"]), where="post", ls="--",
                color="tab:red", label="stranded (fragmentation caused by placement)")
        ax.step(*_thin(x, 100 * ts["unfit_gpu"] / ts["hami_gpu_total"]), where="post", ls=":",
                color="tab:purple", label="unfit (no typical shape can use it)")
    else:
        ax.step(*_thin(x, ts["frag_pct_of_capacity"]), where="post",
                label="fragmentation (% of capacity)", ls="--")
    ax.set(xlabel=xlabel, ylabel="% of the cluster's GPUs", ylim=(0, 100))
    ax.set_title(_title(f"{head}: GPU utilisation and fragmentation" if title else head,
                        context), fontsize=9.5)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    rect = _caption(fig, UTILISATION_NOTE + "\n" + FRAGMENTATION_NOTE, 5)
    return _save_with(fig, path, rect)


def _plot_pending(ts: Columns, path: Path, fill: bool, title: str, context: str) -> Path:
    x, xlabel = _time_axis(ts, fill)
    fig, ax = _pyplot().subplots(figsize=(9, 3.6))
    ax.step(*_thin(x, ts["pods_pending"]), where="post", color="tab:red")
    ax.set(xlabel=xlabel, ylabel="pending pods")
    ax.set_ylim(bottom=0, top=max(1.0, float(ts["pods_pending"].max()) * 1.05)
                if len(x) else 1.0)         # a count: no negative axis when none waited
    ax.set_title(_title("Pods waiting to be scheduled" + (f" ({title})" if title else ""),
                        context), fontsize=9.5)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _plot_fill(ts: Columns, path: Path, title: str, context: str) -> Path:
    x, xlabel = _time_axis(ts, True)
    fig, ax = _pyplot().subplots(figsize=(8, 5.2))
    unalloc = 100 * ts["unallocated_gpu"] / ts["hami_gpu_total"]
    ax.step(*_thin(x, unalloc), where="post", label="unallocated GPU")
    ax.plot([0, 100, x.max() if len(x) else 100], [100, 0, 0], color="grey", ls=":",
            label="ideal")
    ax.set(xlabel=xlabel, ylabel="unallocated GPU (%)", ylim=(0, 100))
    ax.set_title(_title("Unallocated GPU as the workload arrives"
                        + (f" ({title})" if title else ""), context, 95), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def _when(seconds: float, fill: bool) -> str:
    if fill:
        return f"after {seconds:,.0f} pods were submitted"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"at t = {seconds / size:.1f} {unit}"
    return f"at t = {seconds:.0f} s"


def _plot_occupancy(occupancy: np.ndarray, path: Path, title: str, context: str,
                    peak: tuple[float, int] | None, group_runs, fill: bool) -> Path:
    n_nodes, width = occupancy.shape
    fig, ax = _pyplot().subplots(figsize=(9, 5.2))
    # an idle card (0) in its own grey, below the colour scale: in viridis it would be
    # the same dark as a card with one small tenant, and which cards have a tenant is
    # what the figure is for
    cmap = _pyplot().get_cmap("viridis").with_extremes(under="0.82", bad="white")
    im = ax.imshow(np.where(occupancy.T > 0, occupancy.T, np.where(np.isnan(occupancy.T),
                                                                  np.nan, -1.0)),
                   aspect="auto", interpolation="nearest", cmap=cmap, vmin=1e-9, vmax=1)
    when = ""
    if peak is not None:
        when = f" ({_when(peak[0], fill)}, {peak[1]:,} cards with a tenant)"
    head = "Card allocation at the peak" + when
    ax.set(ylabel="card (registration order)")
    ax.set_title(_title(head + (f"\n{title}" if title else ""), context), fontsize=9.5)
    runs = list(group_runs or [])
    if len(runs) > 1:
        starts = [s for s, _ in runs] + [n_nodes]
        for s in starts[1:-1]:
            ax.axvline(s - 0.5, color="white", lw=0.8)
        ax.set_xticks([(a + b - 1) / 2 for a, b in zip(starts, starts[1:])])
        ax.set_xticklabels([g for _, g in runs], rotation=30 if len(runs) > 4 else 0,
                           ha="right" if len(runs) > 4 else "center", fontsize=8)
        ax.set_xlabel(f"{n_nodes:,} nodes by group (cluster order within a group)")
    else:
        ax.set_xlabel(f"node (cluster order, {n_nodes:,} nodes"
                      + (f", group {runs[0][1]})" if runs else ")"))
    ax.set_yticks(range(width) if width <= 16 else ax.get_yticks())
    bar = fig.colorbar(im, ax=ax, fraction=0.04, extend="min", extendfrac=0.06)
    bar.set_label("allocated share of the card\n(largest of slots, cores, memory used;"
                  " grey: idle)", fontsize=8)
    note = ("Each column is a node, each row one of its cards. Grey: an idle card (no "
            "tenant). Blank cells: the node has fewer cards than the widest node. 1 = a card "
            "whose slots, cores or memory are fully allocated.")
    rect = _caption(fig, note, 2)
    return _save_with(fig, path, rect)


def _plot_groups(groups: Sequence[tuple[str, Columns]], ts: Columns, path: Path, fill: bool,
                 title: str, context: str) -> Path | None:
    """One panel per node group with GPUs (``groups``: each group's time series, in
    cluster order): cards with a tenant, memory allocated, stranded and unfit GPU,
    each as % of the group's GPUs."""
    parts = dict(groups)
    names = [name for name, g in groups if g["hami_gpu_total"][0] > 0]
    if len(names) < 2:
        return None
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    fig, axes = _pyplot().subplots(rows, cols, figsize=(4.2 * cols, 3.1 * rows + 1.2),
                                   squeeze=False, sharex=True, sharey=True)
    times = ts["time"]
    end = float(times[-1]) if len(times) else 0.0
    # every panel on the run's own axis, to the run's end (a group's rows stop at its
    # last change); fill mode: pods submitted
    unit, xlabel = (1.0, "pods submitted") if fill else _time_unit(end - times[0]
                                                                   if len(times) else 0)
    for ax, name in zip(axes.flat, names):
        g = parts[name]
        t = np.asarray(g["time"], dtype=float)
        gpus = np.asarray(g["hami_gpu_total"], dtype=float)
        series = {
            "cards with a tenant": g["hami_gpu_allocated_pct"],
            "memory allocated": 100 * g["hami_gpu_memory_allocated_bytes"]
            / np.maximum(g["hami_gpu_memory_total_bytes"], 1),
            "stranded": 100 * g["stranded_gpu"] / gpus,
            "unfit": 100 * g["unfit_gpu"] / gpus,
        }
        styles = {"stranded": {"ls": "--", "color": "tab:red"},
                  "unfit": {"ls": ":", "color": "tab:purple"}}
        for label, y in series.items():
            ax.step(*_thin(t / unit, y, end=end / unit), where="post", label=label,
                    **styles.get(label, {}))
        ax.set_title(f"{name} ({int(gpus[0]):,} GPUs)", fontsize=9)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
    for ax in axes[:, 0]:
        ax.set_ylabel("% of the group's GPUs")
    axes.flat[0].legend(fontsize=7, loc="best")
    text = _title("Utilisation and fragmentation per node group"
                  + (f" ({title})" if title else ""), context)
    fig.suptitle(text, fontsize=9.5)
    # tight_layout leaves room for the suptitle itself
    return _save_with(fig, path, _caption(fig, FRAGMENTATION_NOTE, 3))


#: what the MIG lines mean, under the MIG figure
MIG_NOTE = (
    "A MIG card's slices are its placement slots (NVIDIA's memory slices: 8 on an A100 or "
    "H100, 4 on an A30). In use: covered by an instance. Stranded: free, but no free placement "
    "of a profile large enough for one of the workload's typical pods covers it - the "
    "instances' positions leave it unusable until one of them leaves.")


def _plot_mig(card_types: Sequence[tuple[str, Columns]], ts: Columns, path: Path, title: str,
              context: str) -> Path:
    """MIG slices in use and stranded over time, per card type (``card_types``: each
    type's time series; % of its slices)."""
    fig, ax = _pyplot().subplots(figsize=(9, 4.6))
    times = ts["time"]
    end = float(times[-1]) if len(times) else 0.0
    unit, xlabel = _time_unit(end - times[0] if len(times) else 0)
    colours = _pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (ctype, g) in enumerate(card_types):
        t = np.asarray(g["time"], dtype=float) / unit
        total = float(g["mig_slots_total"][0]) or 1.0
        used = 100 * g["mig_slots_used"] / total
        stranded = 100 * g["mig_slots_stranded"] / total
        c = colours[k % len(colours)]
        ax.step(*_thin(t, used, end=end / unit), where="post", color=c,
                label=f"{ctype}: slices in use ({int(total):,} slices)")
        ax.step(*_thin(t, stranded, end=end / unit), where="post", color=c, ls="--",
                label=f"{ctype}: slices stranded by geometry")
    ax.set(xlabel=xlabel, ylabel="% of the card type's MIG slices", ylim=(0, 100))
    ax.set_title(_title("MIG slices in use and stranded" + (f" ({title})" if title else ""),
                        context), fontsize=9.5)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="best")
    return _save_with(fig, path, _caption(fig, MIG_NOTE, 3))


#: how to read the per-family figure, under it
FAMILIES_NOTE = (
    "One panel per device family, each in its own units: memory is the family's own (NPU, DCU "
    "or GPU memory are never added together) and cores are its own unit (percent of a card; "
    "AMD: Compute Units; Moore Threads: 16 a card). A family that charges no memory or cores "
    "(Biren shares a card by slots alone) draws cards with a tenant only. Each line holds its "
    "value until the next change and ends where the run ends.")


def _plot_families(families: Sequence[tuple[str, Columns]], ts: Columns, path: Path,
                   title: str, context: str) -> Path:
    """Per device family (``families``: each family's series, % of its own
    capacity), a panel of its cards with a tenant, memory and cores allocated."""
    plt = _pyplot()
    n = len(families)
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.55 * n + 1.6), sharex=True, squeeze=False)
    times = ts["time"]
    end = float(times[-1]) if len(times) else 0.0
    unit, xlabel = _time_unit(end - times[0] if len(times) else 0)
    lines = (("cards_with_tenant_pct", "cards with a tenant", "C0", "-"),
             ("memory_allocated_pct", "memory allocated", "C1", "--"),
             ("cores_allocated_pct", "cores allocated", "C2", ":"))
    for k, (ax, (word, g)) in enumerate(zip(axes[:, 0], families)):
        t = np.asarray(g["time"], dtype=float) / unit
        charges = not getattr(family(word), "slots_only", False)
        for key, label, colour, style in lines:
            if key != "cards_with_tenant_pct" and not charges:
                continue        # Biren charges no memory and no cores
            y = np.asarray(g[key], dtype=float)
            ax.step(*_thin(t, y, end=end / unit), where="post", color=colour, ls=style,
                    label=label)
        ax.set_ylim(0, 100)
        ax.set_ylabel("% of family", fontsize=8)
        ax.set_title(f"{word} ({int(g['cards'][0]):,} cards)", fontsize=8.5, loc="left")
        ax.grid(alpha=0.3)
        if k == 0 or not charges:
            # above the panel, right: clear of every line
            ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3,
                      frameon=False, borderaxespad=0.1)
    axes[-1, 0].set_xlabel(xlabel)
    fig.suptitle(_title("Allocation per device family" + (f" ({title})" if title else ""),
                        context), fontsize=9.5)
    return _save_with(fig, path, _caption(fig, FAMILIES_NOTE, 3))


def _styles(labels: Sequence[str]) -> dict[str, dict]:
    """Colour per card policy, line style per node policy, for ``node=X card=Y`` labels."""
    parts = [dict(p.split("=", 1) for p in lab.split() if "=" in p) for lab in labels]
    cards = list(dict.fromkeys(p.get("card", lab) for p, lab in zip(parts, labels)))
    nodes = list(dict.fromkeys(p.get("node", "") for p in parts))
    colours = _pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    dashes = ["-", "--", ":", "-."]
    return {lab: {"color": colours[cards.index(p.get("card", lab)) % len(colours)],
                  "ls": dashes[nodes.index(p.get("node", "")) % len(dashes)]}
            for p, lab in zip(parts, labels)}


def _legend_title(labels: Sequence[str]) -> str | None:
    """What colour and line style mean, for the labels :func:`_styles` styled."""
    hami = sum("card=" in lab for lab in labels)
    if hami == len(labels):
        return "colour: card policy, style: node policy"
    if hami == 0:           # research policies (FGD's model): one colour each
        return None
    return "colour: card policy, or a policy on FGD's model; style: node policy"


#: how to read the comparison over time, under its figure
COMPARE_NOTE = (
    "Every policy places the same pods. Cards with a tenant: a policy that spreads pods "
    "(card policy spread) occupies more cards for the same pods; a higher line is not more "
    "work done, and a lower one leaves whole cards free for pods that need them. Stranded: "
    "free GPU the workload's typical pod shapes could use on an empty node but not as the "
    "cards are used now (fragmentation caused by placement); lower is better. Pending: pods "
    "waiting; a policy that places better waits less. Each line ends where its run ends.")


def _compare_measure(ts: pd.DataFrame, what: str) -> np.ndarray:
    """One panel's measure of a comparison's run, per row of its time series."""
    cap = ts["hami_gpu_total"].iloc[0] or 1
    if what == "unallocated":
        return 100 * ts["unallocated_gpu"].to_numpy() / cap
    if what == "allocated":
        return 100 * ts["hami_gpu_allocated"].to_numpy() / cap
    if what == "stranded":
        return (ts["stranded_pct_of_capacity"] if "stranded_pct_of_capacity" in ts
                else ts["frag_pct_of_capacity"]).to_numpy(dtype=float)
    return ts["pods_pending"].to_numpy(dtype=float)


def plot_compare(series: Mapping[str, Sequence[pd.DataFrame]], path: Path, fill: bool,
                 context: str = "") -> Path:
    """The runs of a comparison over time, per policy the median over seeds with a
    25-75 % band; colour = card policy, line style = node policy.

    In replay mode three panels share the time axis: cards with a tenant,
    stranded GPU (fragmentation caused by placement) and pending pods. In fill
    mode one panel: unallocated GPU % against the arrived workload (integer
    percent bins), zoomed on where the policies part.
    """
    styles = _styles(list(series))
    if fill:
        fig, axes = _pyplot().subplots(figsize=(8, 5))
        panels = [(axes, "unallocated")]
    else:
        fig, axes = _pyplot().subplots(3, 1, figsize=(9, 9.5), sharex=True)
        panels = list(zip(axes, ("allocated", "stranded", "pending")))
    xlabel = "arrived workload (% of GPU capacity)"
    if not fill:                # one time unit for every policy: the longest run's
        unit, xlabel = _time_unit(max((float(ts["time"].iloc[-1] - ts["time"].iloc[0])
                                       for frames in series.values() for ts in frames
                                       if len(ts)), default=0.0))
    for label, frames in series.items():
        frames = [ts for ts in frames if len(ts)]
        if not frames:
            continue
        if fill:
            xs = [_time_axis(ts, True)[0] for ts in frames]
            grid = np.arange(0, int(np.floor(min(x.max() for x in xs))) + 1)
        else:
            # the series are step functions of time: their median over seeds is one
            # too, changing where any seed changes, to the last seed's end (a seed
            # that ended holds its final state)
            xs = [ts["time"].to_numpy(dtype=float) for ts in frames]
            grid = np.unique(np.concatenate(xs))
        for ax, what in panels:
            ys = []
            for x, ts in zip(xs, frames):
                y = _compare_measure(ts, what)
                ys.append(np.interp(grid, x, y) if fill else
                          y[np.maximum(np.searchsorted(x, grid, side="right") - 1, 0)])
            ys = np.array(ys)
            mid = np.median(ys, axis=0)
            if fill:
                ax.plot(grid, mid, label=label, lw=1.6, **styles[label])
                if len(ys) > 1:
                    ax.fill_between(grid, np.percentile(ys, 25, axis=0),
                                    np.percentile(ys, 75, axis=0),
                                    color=styles[label]["color"], alpha=0.15, lw=0)
                continue
            t = grid / unit
            ax.step(*_thin(t, mid), where="post", label=label, lw=1.6, **styles[label])
            if len(ys) > 1:
                lo, hi = np.percentile(ys, 25, axis=0), np.percentile(ys, 75, axis=0)
                keep = np.union1d(_keep(t, lo, 1200), _keep(t, hi, 1200))
                ax.fill_between(t[keep], lo[keep], hi[keep], step="post",
                                color=styles[label]["color"], alpha=0.15, lw=0)
    if fill:
        ax = axes
        top = ax.get_xlim()[1]
        ax.plot([0, 100, top], [100, 0, 0], color="black", lw=0.8, ls=":", label="ideal")
        lows = [ln.get_ydata()[-1] for ln in ax.get_lines()[:-1]]
        ax.set(xlabel="arrived workload (% of GPU capacity)", ylabel="unallocated GPU (%)",
               xlim=(50, top), ylim=(0, max(50.0, 1.3 * max(lows, default=0))))
        ax.set_title(_title("Unallocated GPU vs arrived workload\n(median over seeds, "
                            "25–75 % band)", context), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right", title=_legend_title(list(series)),
                  title_fontsize=8)
        return _save(fig, path)
    axes[0].set(ylabel="cards with a tenant (%)", ylim=(0, 100))
    axes[1].set(ylabel="stranded GPU (% of GPUs)")
    axes[1].set_ylim(bottom=0)
    axes[2].set(ylabel="pending pods", xlabel=xlabel)
    axes[2].set_ylim(bottom=0)
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="best", title=_legend_title(list(series)),
                   title_fontsize=8)
    seeds = max((len(frames) for frames in series.values()), default=1)
    axes[0].set_title(_title("Policies compared over time, the same pods under each"
                             + (" (median over seeds, 25–75 % band)" if seeds > 1 else ""),
                             context), fontsize=10)
    rect = _caption(fig, COMPARE_NOTE, 3)
    return _save_with(fig, path, rect)


def plot_fill_curves(curves: pd.DataFrame, path: Path, xlim=(50, 130),
                     reference: pd.DataFrame | None = None, title: str = "",
                     context: str = "") -> Path:
    """Figure 9(a) of the FGD paper: median unallocated GPU % per policy over
    seeds, with a 25-75 % band and the ideal line.

    ``reference`` (index: arrived percent, columns: policy) adds published
    medians as markers in each policy's colour.
    """
    fig, ax = _pyplot().subplots(figsize=(8, 5.2))
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
    # zoomed on where the curves run, never above the highest (a curve cut off by
    # the zoom would be drawn nowhere)
    ax.set(xlabel="arrived workload (% of GPU capacity)", ylabel="unallocated GPU (%)",
           xlim=xlim, ylim=(0, min(max(top * 1.15, 10), 100)))
    ax.set_title(title or _title("Unallocated GPU vs arrived workload\n"
                                 "(median over seeds, 25–75 % band)", context),
                 fontsize=10 if context else None)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", ncol=1 if len(labels) < 8 else 2)
    return _save(fig, path)


#: the bars' hatching per node policy (its line style in the line figures)
_HATCHES = {"-": None, "--": "//", ":": "..", "-.": "xx"}


def _bar_style(style: Mapping[str, str]) -> dict:
    """A bar's colour and hatching for a :func:`_styles` style, for every bar of a
    policy in every panel (the legend shows the hatching, so each of its bars must):
    white lines and edge, which read on any colour of the cycle."""
    hatch = _HATCHES.get(style.get("ls", "-"))
    return {"facecolor": style["color"], "hatch": hatch,
            "edgecolor": "white" if hatch else style["color"], "linewidth": 0.6 if hatch else 0}


def plot_placement(rows: Sequence[Mapping], path: Path, context: str = "") -> Path:
    """Where multi-GPU pods landed, by pod size and policy, beside pending time.

    ``rows``: per run, ``policy``, ``placement_by_gpus`` (the summary's figures per
    number of cards) and ``pending_p99_s``. Left: % of multi-GPU pods whose cards
    span more than one NUMA node; middle: their mean pair score (HAMi's
    ``node-nvidia-score``, higher = better linked); right: p99 pending time. Bars
    are means over seeds.
    """
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    sizes = sorted({int(k) for r in rows for k in r.get("placement_by_gpus", {})})
    styles = _styles(policies)
    fig, axes = _pyplot().subplots(1, 3, figsize=(13, 5.4),
                                   gridspec_kw={"width_ratios": [2, 2, 1.2]})
    width = 0.8 / max(len(policies), 1)
    x = np.arange(len(sizes))
    longest = max((r["pending_p99_s"] for r in rows), default=0.0)
    unit, unit_name = next((u for u in ((3600.0, "h"), (60.0, "min")) if longest >= 3 * u[0]),
                           (1.0, "s"))
    for j, policy in enumerate(policies):
        runs = [r for r in rows if r["policy"] == policy]
        for ax, key in ((axes[0], "cross_numa_pct"), (axes[1], "mean_pair_score")):
            ys = []
            for k in sizes:
                vals = [r["placement_by_gpus"][str(k)][key] for r in runs
                        if key in r.get("placement_by_gpus", {}).get(str(k), {})]
                ys.append(float(np.mean(vals)) if vals else np.nan)
            bars = ax.bar(x + (j - (len(policies) - 1) / 2) * width, ys, width,
                          label=policy, **_bar_style(styles[policy]))
            ax.bar_label(bars, labels=["" if np.isnan(y) else f"{y:.0f}" for y in ys],
                         fontsize=7, padding=1)
        p99 = float(np.mean([r["pending_p99_s"] for r in runs])) / unit
        bars = axes[2].bar(j, p99, label=policy, **_bar_style(styles[policy]))
        axes[2].bar_label(bars, labels=[f"{p99:,.1f}" if p99 < 100 else f"{p99:,.0f}"],
                          fontsize=7, padding=1)
    for ax, label in ((axes[0], "pods across NUMA nodes (%)"),
                      (axes[1], "mean pair score")):
        ax.set_xticks(x, [f"{k} GPUs" for k in sizes])
        ax.set(xlabel="pod size", ylabel=label)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylim(0, 100)
    axes[2].set_xticks([])
    axes[2].set(ylabel=f"pending time p99 ({unit_name})", xlabel="all pods")
    axes[2].grid(alpha=0.3, axis="y")
    title = _title("Multi-GPU placements by pod size and policy (mean over seeds)", context)
    fig.suptitle(title, fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    n_title = title.count("\n") + 1
    top = 1 - (0.2 * n_title + 0.45) / fig.get_figheight()
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, top),
               ncol=len(policies) if len(policies) <= 3 else min(-(-len(policies) // 2), 3),
               fontsize=8, frameon=False)
    note = ("Across NUMA nodes: the pod's cards sit under more than one CPU socket. Pair score: "
            "HAMi's score of each card pair (hami.io/node-nvidia-score: NVLink 100 per link, one "
            "PCIe switch 50, one socket 20, across sockets 10), averaged over the pod's pairs; "
            "missing bars: the cluster does not describe that measure or no pod of that size ran.")
    rect = _caption(fig, note, 2)
    return _save_with(fig, path, (rect[0], rect[1], rect[2], 1 - 0.45 / fig.get_figheight()))
