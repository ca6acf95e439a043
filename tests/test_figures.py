"""Figures a person understands without the code: titles, legends, captions (hamisim.plots).

Every figure is captured as it is saved, and its texts are read back.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from hamisim import plots
from hamisim.cli import main
from hamisim.studies import workers

from samples import T4_AND_MIG_NODES

CLUSTER = """\
nodes:
  - name_prefix: h100
    replicas: 2
    gpus: 2
    card: {devmem: 80000, type: NVIDIA-H100}
  - name_prefix: t4
    replicas: 2
    gpus: 1
    card: {devmem: 16000, type: NVIDIA-T4}
"""
TRACE = "name,arrival,duration,gpu,gpumem,gpucores,use_gputype\n" + "".join(
    f"p{i},{i * 5},{100 + i},1,{40000 if i % 3 else 3000},{30},{'H100' if i % 3 else ''}\n"
    for i in range(30))


def texts(fig) -> dict:
    out = {"suptitle": fig._suptitle.get_text() if fig._suptitle else "",
           "captions": [t.get_text() for t in fig.texts if t is not fig._suptitle],
           "titles": [], "legends": [], "xticks": [], "ylabels": [], "xlabels": []}
    for ax in fig.axes:
        out["titles"].append(ax.get_title())
        out["ylabels"].append(ax.get_ylabel())
        out["xlabels"].append(ax.get_xlabel())
        out["xticks"] += [t.get_text() for t in ax.get_xticklabels()]
        if ax.get_legend() is not None:
            out["legends"] += [t.get_text() for t in ax.get_legend().get_texts()]
    return out


@pytest.fixture
def captured(monkeypatch):
    # 'hamisim run' draws on worker processes where there are several CPUs: here,
    # in this process, where the figures can be captured
    monkeypatch.setattr(workers, "idle_cpus", lambda: 1)
    seen = {}
    real_save, real_save_with = plots._save, plots._save_with

    def save(fig, path, *args):
        seen[path.name] = texts(fig)
        return (real_save_with if args else real_save)(fig, path, *args)
    monkeypatch.setattr(plots, "_save", save)
    monkeypatch.setattr(plots, "_save_with", save)
    return seen


@pytest.fixture
def files(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.csv").write_text(TRACE)
    return tmp_path


def test_run_figures_name_the_workload_and_explain_their_measures(files, captured):
    assert main(["run", str(files / "cluster.yaml"), str(files / "trace.csv"),
                 "--out", str(files / "out")]) == 0
    assert set(captured) == {"utilisation.png", "pending.png", "occupancy.png", "groups.png"}
    util = captured["utilisation.png"]
    (title,) = util["titles"]
    assert "node=binpack card=spread" in title
    assert "trace.csv: 30 pods arriving over 2.4 min, as traced" in title
    assert "cluster.yaml: 4 nodes, 6 GPUs (4 NVIDIA-H100, 2 NVIDIA-T4)" in title
    assert any(s.startswith("stranded") for s in util["legends"])
    assert any(s.startswith("unfit") for s in util["legends"])
    assert "Unfit: they cannot use it even on an empty node" in util["captions"][0]
    occ = captured["occupancy.png"]
    assert "Card allocation at the peak (at t = " in occ["titles"][0]
    assert "cards with a tenant)" in occ["titles"][0]
    assert occ["xticks"] == ["h100", "t4"]                      # nodes grouped and named
    assert any("allocated share of the card" in y for y in occ["ylabels"])   # colour bar
    assert "Blank cells: the node has fewer cards" in occ["captions"][0]
    groups = captured["groups.png"]
    assert [t for t in groups["titles"] if t] == ["h100 (4 GPUs)", "t4 (2 GPUs)"]
    assert "per node group" in groups["suptitle"] and "trace.csv" in groups["suptitle"]
    assert "trace.csv" in captured["pending.png"]["titles"][0]


def test_plot_redraws_the_same_figures(files, captured):
    assert main(["run", str(files / "cluster.yaml"), str(files / "trace.csv"),
                 "--out", str(files / "out")]) == 0
    first = dict(captured)
    captured.clear()
    assert main(["plot", str(files / "out")]) == 0
    assert captured == first


def test_compare_figure_has_allocation_fragmentation_and_pending_panels(files, captured):
    assert main(["compare", str(files / "cluster.yaml"), str(files / "trace.csv"),
                 "--gpu-policy", "binpack", "--gpu-policy", "spread",
                 "--out", str(files / "cmp")]) == 0
    fig = captured["compare.png"]
    assert fig["ylabels"] == ["cards with a tenant (%)", "stranded GPU (% of GPUs)",
                              "pending pods"]
    assert "trace.csv" in fig["titles"][0] and "cluster.yaml" in fig["titles"][0]
    assert set(fig["legends"]) >= {"node=binpack card=binpack", "node=binpack card=spread"}


@pytest.mark.parametrize("width,dpi", [(3, 100), (5.5, 130), (9, 130), (12.6, 130), (20, 72)])
def test_captions_break_where_matplotlib_breaks_them(width, dpi):
    """Captions find their line breaks in a few measurements; the lines are
    matplotlib's own, for any figure width and resolution."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    fig = plt.figure(figsize=(width, 4), dpi=dpi)
    for text in (plots.FRAGMENTATION_NOTE, plots.MIG_NOTE, "two\nlines", "word",
                 "a-very-long-word-that-fits-on-no-line-at-all-" * 8 + " then short words"):
        plots._caption(fig, text, 3)
    fig.canvas.draw()                   # the texts get their renderer
    wrapped = [t._get_wrapped_text() for t in fig.texts]
    plt.close(fig)
    assert wrapped == [Text._get_wrapped_text(t) for t in fig.texts]
    assert wrapped[0].count("\n") >= (2 if width < 12 else 1)      # the note was wrapped
    assert wrapped[2] == "two\nlines" and wrapped[3] == "word"


# ---------------------------------------------------------------------------
# drawn values against the time series, on a run whose drain is long and sparse

DRAIN_CLUSTER = """\
nodes:
  - name_prefix: dgx
    replicas: 1
    cpu_milli: 192000
    memory_mib: 2097152
    topology: dgx-h100
""" + T4_AND_MIG_NODES


def drain_trace() -> str:
    """2,000 short pods in two hours (thousands of time-series rows), then a few pods
    that keep cards for hours: the H100 group empties at 30 h, the run ends at 50 h."""
    import random
    rnd = random.Random(7)
    rows = ["name,arrival,duration,gpu,gpumem,gpucores,use_gputype"]
    for i in range(2000):
        arrival, duration = rnd.uniform(0, 7200), rnd.uniform(60, 300)
        if rnd.random() < 0.08:
            rows.append(f"m{i},{arrival:.0f},{duration:.0f},{rnd.choice([2, 4])},20000,50,H100")
        else:
            rows.append(f"p{i},{arrival:.0f},{duration:.0f},1,1000,10,")
    rows += ["long-h100,100,108000,1,20000,50,H100", "long-t4,200,180000,1,1000,10,T4",
             "drain-h100,150,72000,2,20000,50,H100", "drain-t4,250,43200,1,1000,10,T4",
             "drain-t4b,260,144000,1,3000,20,T4"]
    return "\n".join(rows) + "\n"


def drawn(fig) -> dict:
    """What a figure draws: per axes its title, lines and bars, and its legends' hatching."""
    out = []
    for ax in fig.axes:
        out.append({
            "title": ax.get_title(), "ylabel": ax.get_ylabel(), "xlabel": ax.get_xlabel(),
            "lines": [(ln.get_label(), np.asarray(ln.get_xdata(), float),
                       np.asarray(ln.get_ydata(), float), ln.get_drawstyle())
                      for ln in ax.get_lines()],
            "bars": [(c.get_label(), [p.get_hatch() for p in c.patches])
                     for c in ax.containers],
        })
    legends = [lg for lg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if lg]
    hatches = {t.get_text(): h.get_hatch() for lg in legends
               for t, h in zip(lg.get_texts(), lg.legend_handles) if hasattr(h, "get_hatch")}
    return {"axes": out, "legend_hatches": hatches}


@pytest.fixture(scope="module")
def drain(tmp_path_factory):
    """A run and a comparison of the drain trace, every figure's drawing captured."""
    base = tmp_path_factory.mktemp("drain")
    (base / "cluster.yaml").write_text(DRAIN_CLUSTER)
    (base / "trace.csv").write_text(drain_trace())
    seen = {}
    real_save, real_save_with = plots._save, plots._save_with

    def save(fig, path, *args):
        seen[path.name] = drawn(fig)
        return (real_save_with if args else real_save)(fig, path, *args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(workers, "idle_cpus", lambda: 1)
        mp.setattr(plots, "_save", save)
        mp.setattr(plots, "_save_with", save)
        assert main(["run", str(base / "cluster.yaml"), str(base / "trace.csv"), "--format",
                     "csv", "--out", str(base / "run"), "--no-progress"]) == 0
        assert main(["compare", str(base / "cluster.yaml"), str(base / "trace.csv"),
                     "--node-policy", "binpack", "--node-policy", "spread", "--format", "csv",
                     "--out", str(base / "cmp"), "--no-progress"]) == 0
    return base, seen


def step_value(t: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A step function's value (``y[i]`` from ``t[i]`` on) at the times ``at``."""
    return y[np.searchsorted(t, at, side="right") - 1]


def line(fig: dict, label: str, axes: int = 0):
    (found,) = [ln for ln in fig["axes"][axes]["lines"] if ln[0] == label]
    return found


def check_drawn(x, y, style, t, series, end, unit):
    """The drawn step function ``(x, y)`` (in ``unit`` s) against the series
    ``(t, series)``, a run of ``end`` s drawn ~1,200 pixels wide."""
    assert style == "steps-post"
    assert x[-1] * unit == pytest.approx(end, rel=1e-12)         # ends where the run ends
    width = (end - t[0]) / 1200
    # where rows are two pixels apart or more (the drain), every change is drawn
    # where it happened: exact everywhere from there on
    close = np.flatnonzero(np.diff(t) < 2 * width)
    dense_until = t[close[-1] + 1] if len(close) else t[0]
    assert dense_until < 0.25 * end                              # most of the run is drain
    sparse = t[t > dense_until]
    probes = np.concatenate([sparse, (sparse[:-1] + sparse[1:]) / 2, [end]])
    np.testing.assert_allclose(step_value(x * unit, y, probes), step_value(t, series, probes),
                               atol=1e-9)
    # in the dense start each drawn value is one the series took within a pixel's time
    for at in np.linspace(t[0], dense_until, 997):
        window = series[(t >= at - width) & (t <= at + width)]
        value = step_value(x * unit, y, np.array([at]))[0]
        held = step_value(t, series, np.array([at]))[0]
        assert min(window.min(initial=held), held) - 1e-9 <= value \
            <= max(window.max(initial=held), held) + 1e-9
    # a series that reaches 0 for good is drawn 0 from then on
    if series[-1] == 0:
        nonzero = np.flatnonzero(series != 0)
        zero_from = t[nonzero[-1] + 1] if len(nonzero) else t[0]
        assert not y[x * unit >= zero_from].any()


def test_run_figures_draw_the_time_series_at_their_times_to_the_run_end(drain):
    import pandas as pd
    base, seen = drain
    summary = json.loads((base / "run" / "summary.json").read_text())
    end = summary["results"]["end_time_s"]
    ts = pd.read_csv(base / "run" / "timeseries.csv")
    t = ts["time"].to_numpy(float)
    assert len(t) > 4 * 1200 and end > 48 * 3600            # thinned, and a long drain
    unit = 3600.0
    util = seen["utilisation.png"]
    assert util["axes"][0]["xlabel"] == "time (hours)"
    for label, values in (
            ("cards with a tenant", 100 * ts["hami_gpu_allocated"] / ts["hami_gpu_total"]),
            ("cores allocated", 100 * ts["hami_gpu_core_allocated_ratio"]),
            ("memory allocated", 100 * ts["hami_gpu_memory_allocated_bytes"]
             / ts["hami_gpu_memory_total_bytes"]),
            ("stranded (fragmentation caused by placement)", ts["stranded_pct_of_capacity"])):
        _, x, y, style = line(util, label)
        check_drawn(x, y, style, t, values.to_numpy(float), end, unit)
    assert len(line(util, "cards with a tenant")[1]) < len(t)        # thinning did thin
    _, x, y, style = seen["pending.png"]["axes"][0]["lines"][0]
    check_drawn(x, y, style, t, ts["pods_pending"].to_numpy(float), end, unit)

    groups = pd.read_csv(base / "run" / "timeseries_groups.csv")
    panels = {a["title"].split(" (")[0]: k for k, a in enumerate(seen["groups.png"]["axes"])
              if a["title"]}
    assert set(panels) == {"dgx", "t4", "a100"}
    for name, k in panels.items():
        g = groups[groups["group"] == name]
        _, x, y, style = line(seen["groups.png"], "cards with a tenant", k)
        check_drawn(x, y, style, g["time"].to_numpy(float),
                    g["hami_gpu_allocated_pct"].to_numpy(float), end, unit)
    dgx = groups[groups["group"] == "dgx"]
    busy = np.flatnonzero(dgx["hami_gpu_allocated"].to_numpy() > 0)
    emptied = dgx["time"].to_numpy()[busy[-1] + 1]
    assert 29 * 3600 < emptied < 31 * 3600                    # the H100 group empties at 30 h
    _, x, y, _ = line(seen["groups.png"], "cards with a tenant", panels["dgx"])
    assert not y[x * unit > emptied].any() and x[-1] * unit == pytest.approx(end)

    mig = pd.read_csv(base / "run" / "timeseries_mig.csv")
    (ctype,) = set(mig["card_type"])
    _, x, y, style = line(seen["mig.png"], f"{ctype}: slices in use (16 slices)")
    check_drawn(x, y, style, mig["time"].to_numpy(float),
                100 * mig["mig_slots_used"].to_numpy(float) / 16, end, unit)


def test_the_compare_figure_draws_each_policy_as_its_run(drain):
    import pandas as pd
    base, seen = drain
    fig = seen["compare.png"]
    for run in sorted((base / "cmp" / "runs").iterdir()):
        summary = json.loads((run / "summary.json").read_text())
        ts = pd.read_csv(run / "timeseries.csv")
        t = ts["time"].to_numpy(float)
        end = summary["results"]["end_time_s"]
        for k, values in enumerate((100 * ts["hami_gpu_allocated"] / ts["hami_gpu_total"],
                                    ts["stranded_pct_of_capacity"], ts["pods_pending"])):
            _, x, y, style = line(fig, summary["label"], k)
            check_drawn(x, y, style, t, values.to_numpy(float), end, 3600.0)


def test_bars_carry_the_hatching_their_legend_shows(drain):
    _, seen = drain
    fig = seen["placement.png"]
    hatches = fig["legend_hatches"]
    assert hatches["node=binpack card=spread"] is None
    assert hatches["node=spread card=spread"]                   # the other node policy
    panels = [a for a in fig["axes"] if a["bars"]]
    assert len(panels) == 3                                     # NUMA, pair score, p99
    for axes in panels:
        assert {label for label, _ in axes["bars"]} == set(hatches)
        for policy, patches in axes["bars"]:
            assert set(patches) == {hatches[policy]}, (axes["ylabel"], policy)


@pytest.mark.parametrize("seed", range(5))
def test_thinning_keeps_real_rows_and_every_value_held_across_a_time_bin(seed):
    """_thin on a step function with a crowded start and a sparse tail: it returns
    rows of the series, at most four per time bin, the first and last row kept, and
    the drawn step function equals the series wherever nothing changed within a
    bin, and lies within the bin's range where it did."""
    rnd = np.random.default_rng(seed)
    t = np.sort(np.concatenate([rnd.uniform(0, 100, 50_000), rnd.uniform(100, 10_000, 30)]))
    y = np.cumsum(rnd.choice([-1.0, 1.0], len(t)))
    bins = 200
    x, d = plots._thin(t, y, bins, end=12_000)
    assert x[-1] == 12_000 and d[-1] == y[-1] and x[0] == t[0]
    assert len(x) <= 4 * bins + 1 and np.all(np.diff(x) >= 0)
    rows = np.searchsorted(t, x[:-1])
    np.testing.assert_array_equal(t[rows], x[:-1])
    np.testing.assert_array_equal(y[rows], d[:-1])                # every point is a row
    width = (12_000 - t[0]) / bins                  # the bins: slices of the drawn time

    def bin_of(times):
        return np.minimum(((times - t[0]) // width).astype(int), bins - 1)
    at = rnd.uniform(t[0], 12_000, 5_000)
    drawn_at, true_at = step_value(x, d, at), step_value(t, y, at)
    changed = np.zeros(bins, bool)
    changed[bin_of(t[1:])[np.diff(y) != 0]] = True
    inside = changed[bin_of(at)]
    np.testing.assert_array_equal(drawn_at[~inside], true_at[~inside])
    lo = np.full(bins, np.inf)
    hi = np.full(bins, -np.inf)
    np.minimum.at(lo, bin_of(t), y)
    np.maximum.at(hi, bin_of(t), y)
    k = bin_of(at)[inside]
    prev = step_value(t, y, t[0] + k * width)                        # held into the bin
    assert np.all(drawn_at[inside] >= np.minimum(lo[k], prev))
    assert np.all(drawn_at[inside] <= np.maximum(hi[k], prev))


def test_idle_cards_stand_apart_from_cards_with_a_small_tenant(tmp_path, monkeypatch):
    """Occupancy: an idle card is grey, a card with one small tenant a colour of the
    scale, a cell of a node with fewer cards blank."""
    seen = {}

    def save(fig, path, *args):
        (image,) = fig.axes[0].get_images()
        seen["rgba"] = image.to_rgba(image.get_array())
        plots._pyplot().close(fig)
        return path
    monkeypatch.setattr(plots, "_save_with", save)
    occupancy = np.array([[0.0, 0.05], [1.0, np.nan]])          # node 1 has one card
    plots._plot_occupancy(occupancy, tmp_path / "occupancy.png", "", "", None, None, False)
    idle, small = seen["rgba"][0, 0], seen["rgba"][1, 0]        # (card, node)
    full, blank = seen["rgba"][0, 1], seen["rgba"][1, 1]
    assert tuple(idle[:3]) == pytest.approx((0.82, 0.82, 0.82), abs=0.01)
    assert abs(small[:3] - idle[:3]).max() > 0.3 and abs(full[:3] - small[:3]).max() > 0.3
    assert blank[3] == 0 or tuple(blank[:3]) == (1, 1, 1)


def test_sweep_figure_names_its_axis_in_words(tmp_path, captured):
    import pandas as pd

    from hamisim.studies.sweep import STATUS_OK, plot_sweep
    table = pd.DataFrame({"status": STATUS_OK, "mode": "replay", "seed": 0,
                          "replicas": [2, 4, 8], "pending_p99_s": [900.0, 60.0, 0.0],
                          "unplaced_pct": 0.0, "peak_gpu_allocated_pct": [100.0, 80.0, 40.0],
                          "mean_frag_pct_of_capacity": [3.0, 2.0, 1.0]})
    assert plot_sweep(table, tmp_path / "sweep.png") is not None
    fig = captured["sweep.png"]
    assert "pending time p99 (s)" in fig["titles"]
    assert set(fig["xlabels"]) == {"nodes in the varied group (replicas)"}
