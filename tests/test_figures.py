"""Figures a person understands without the code: titles, legends, captions (hamisim.plots).

Every figure is captured as it is saved, and its texts are read back.
"""
from __future__ import annotations

import pytest

from hamisim import plots
from hamisim.cli import main
from hamisim.studies import workers

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
           "titles": [], "legends": [], "xticks": [], "ylabels": []}
    for ax in fig.axes:
        out["titles"].append(ax.get_title())
        out["ylabels"].append(ax.get_ylabel())
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
