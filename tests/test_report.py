"""report.html: every results folder gets one page a person can read, offline.

The page is built from the folder's files alone (rebuilt byte for byte by
``hamisim report``), embeds every figure, and renders in a real browser
(headless Chromium, Debian's ``chromium``, which ``.ci/run`` installs): every
figure loads and the console stays clean. Where no browser exists the browser
test skips and says why.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.studies.report import FIGURE_NOTES, folder_kind, write_report

from samples import T4_AND_MIG_NODES

CLUSTER = "\nnodes:\n" + T4_AND_MIG_NODES
TRACE = "name,arrival,duration,gpu,gpumem,gpucores\n" + "".join(
    f"p{i},{i * 7},{300 + 40 * i},{1 + i % 2},{2000 + 500 * (i % 5)},{10 * (i % 3)}\n"
    for i in range(40))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("report")
    (base / "c.yaml").write_text(textwrap.dedent(CLUSTER))
    (base / "t.csv").write_text(TRACE)
    assert main(["run", str(base / "c.yaml"), str(base / "t.csv"), "--out",
                 str(base / "run"), "--no-progress"]) == 0
    return base / "run"


def test_a_run_writes_a_self_contained_report(run_dir, capsys):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    figures = sorted(p.name for p in (run_dir / "figures").glob("*.png"))
    assert "mig.png" in figures and len(figures) >= 4
    assert page.count('src="data:image/png;base64,') == len(figures)
    assert not re.search(r'(src|href)="(https?:)?//', page)     # nothing fetched from elsewhere
    for name in figures:
        assert FIGURE_NOTES[name] in page.replace("&#x27;", "'")
    for needle in ("What was simulated", "c.yaml: 3 nodes, 10 GPUs", "t.csv: 40 pods",
                   "node=binpack card=spread", "Headline figures", "By pod class", "MIG cards",
                   "trace sha256"):
        assert needle in page, needle
    before = (run_dir / "report.html").read_bytes()
    (run_dir / "report.html").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert (run_dir / "report.html").read_bytes() == before     # rebuilt byte for byte
    capsys.readouterr()


def _section(page: str, title: str) -> str:
    start = page.index(f"<h2>{title}</h2>")
    end = page.find("<h2>", start + 1)
    return page[start:end if end > 0 else None]


def test_the_headline_says_the_figures_in_words_with_units(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    summary = json.loads((run_dir / "summary.json").read_text())
    r = summary["results"]
    headline = _section(page, "Headline figures").split("<details>")[0]
    assert (f"<strong>GPU allocated (cards with a tenant)</strong>: mean "
            f"{r['mean_gpu_allocated_pct']:.1f} %, peak {r['peak_gpu_allocated']} of 10 GPUs "
            "(first at " in headline)
    assert f"<strong>Pods</strong>: {r['pods']} arrived, {r['bound']} bound" in headline
    assert re.search(r"<strong>Simulated time</strong>: \d+ min( \d+ s)?</li>", headline)
    assert re.search(r"longest (\d+ min )?\d+ s", headline)
    assert f"% of {r['mig_slots_total']} (peak {r['mig_slots_used_peak']})" in headline
    assert "<strong>Engine</strong>: compiled (hamisim._replay)" in headline
    assert not re.search(r"[a-z]+_[a-z]+_", headline)          # no summary.json keys
    # the keys themselves stay one click away
    assert "final_unallocated_gpu_pct" in _section(page, "Headline figures")


def test_tables_start_with_what_identifies_a_row(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    table = _section(page, "By pod class")
    assert '<div class="wide"><table>' in table
    keys = re.findall(r'<th(?: title="([^"]+)")?>([^<]+)</th>', table)
    headers = [text for _, text in keys]
    assert headers[:4] == ["class", "pods", "bound", "abandoned"]
    assert headers.index("pending p99 (s)") < headers.index("queueing delay p99 (s)")
    assert not any("_" in h for h in headers)
    assert ("pending_p99_s", "pending p99 (s)") in keys



def test_words_read_from_the_left_and_numbers_align_right():
    from hamisim.studies.report import _table
    html = _table(pd.DataFrame({"pods": [3, 12], "reason": [
        "asks GPU type B200, no card in the cluster has it", "asks 16 GPUs, the largest has 8"],
        "policy": ["binpack", "spread"]}), readable=True)
    cells = re.findall(r'<td( class="text")?>([^<]*)</td>', html)
    assert [(cls, text) for cls, text in cells if cls] == [
        (' class="text"', "asks GPU type B200, no card in the cluster has it"),
        (' class="text"', "asks 16 GPUs, the largest has 8")]

def test_compare_sweep_and_plan_folders_get_reports(run_dir, tmp_path):
    base = run_dir.parent
    assert main(["compare", str(base / "c.yaml"), str(base / "t.csv"), "--gpu-policy", "spread",
                 "--gpu-policy", "binpack", "--out", str(tmp_path / "cmp"),
                 "--no-progress"]) == 0
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert folder_kind(tmp_path / "cmp") == "compare"
    assert "The comparison" in page and "card=binpack" in page and "By pod class" in page
    (tmp_path / "s.yaml").write_text(textwrap.dedent(f"""
        cluster: {base / 'c.yaml'}
        workload: {{trace: {base / 't.csv'}}}
        policies: {{gpu_scheduler_policy: [spread, binpack]}}
        """))
    assert main(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "sw"),
                 "--no-progress", "--workers", "1"]) == 0
    page = (tmp_path / "sw" / "report.html").read_text(encoding="utf-8")
    assert "What was swept" in page and "s.yaml" in page and "sweep.png" not in page
    assert page.count("data:image/png;base64,") == 1


def test_report_of_a_folder_that_is_none(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "not a results folder" in capsys.readouterr().err


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") \
        or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="no Chromium on this machine (Debian's "
                    "'chromium' package; .ci/run installs it in CI)")
def test_the_report_renders_in_a_browser(run_dir, tmp_path):
    browser = _chromium()
    page = tmp_path / "report.html"
    shutil.copy(run_dir / "report.html", page)
    # a wrapper page loads the report in a frame and writes what it finds into its title
    probe = tmp_path / "probe.html"
    probe.write_text(
        "<!DOCTYPE html><html><head><title>waiting</title></head><body>"
        "<iframe id='r' src='report.html' width='1200' height='800'></iframe><script>"
        "document.getElementById('r').addEventListener('load', function () {"
        " var imgs = this.contentDocument.images, ok = 0;"
        " for (var i = 0; i < imgs.length; i++)"
        "  if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;"
        " document.title = 'figures ' + ok + '/' + imgs.length; });"
        "</script></body></html>")
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run([browser, *flags, "--virtual-time-budget=10000", "--dump-dom",
                          probe.as_uri()], capture_output=True, text=True, timeout=120)
    n = len(list((run_dir / "figures").glob("*.png")))
    assert f"<title>figures {n}/{n}</title>" in dom.stdout, dom.stdout[:500]
    shot = subprocess.run([browser, *flags, "--window-size=1280,3000",
                           f"--screenshot={tmp_path / 'report.png'}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert (tmp_path / "report.png").stat().st_size > 50_000     # kept: a picture of the page
    console = [line for line in (dom.stderr + shot.stderr).splitlines() if "CONSOLE" in line]
    assert not console, console
    # a table wider than the window scrolls in its box: the page stays 1,280 px wide
    wide = tmp_path / "wide"
    wide.mkdir()
    pd.DataFrame({"policy": ["node=binpack card=spread"],
                  **{f"measure_{i}_pct": [12345.678] for i in range(40)}}).to_csv(
        wide / "compare.csv", index=False)
    write_report(wide)
    probe = tmp_path / "width.html"
    probe.write_text(
        "<!DOCTYPE html><html><head><title>waiting</title></head><body style='margin:0'>"
        "<iframe id='r' src='wide/report.html' width='1280' height='800'></iframe><script>"
        "document.getElementById('r').addEventListener('load', function () {"
        " var d = this.contentDocument.documentElement, t = this.contentDocument"
        ".querySelector('table');"
        " document.title = 'page ' + d.scrollWidth + ' table ' + t.scrollWidth; });"
        "</script></body></html>")
    dom = subprocess.run([browser, *flags, "--virtual-time-budget=10000", "--dump-dom",
                          probe.as_uri()], capture_output=True, text=True, timeout=120)
    widths = re.search(r"<title>page (\d+) table (\d+)</title>", dom.stdout)
    assert widths, dom.stdout[:500]
    assert int(widths[1]) <= 1280 < int(widths[2])


def test_results_display_in_a_notebook(run_dir, tmp_path):
    # Jupyter calls _repr_html_: the run's headline table and its utilisation drawn inline
    from hamisim.studies.runs import RunSpec, run

    base = run_dir.parent
    result = run(RunSpec(str(base / "c.yaml"), str(base / "t.csv"), progress=False))
    page = result._repr_html_()
    assert "<svg" in page and "GPUs with a tenant (%)" in page and page.count("<polyline") == 2
    assert "pending_p99_s" in page and "mig_slots_total" in page
    from hamisim.studies.sweep import SweepOutcome

    outcome = SweepOutcome(result.summary_table(), tmp_path, tmp_path / "results.parquet",
                           run_dir / "figures" / "utilisation.png", None)
    shown = outcome._repr_html_()
    assert "data:image/png;base64," in shown and "hamisim sweep: 1 cells" in shown


def test_a_failed_report_write_leaves_the_previous_one_and_no_temporary_file(run_dir, tmp_path,
                                                                             monkeypatch):
    """write_report replaces report.html whole: a write that fails half-way (a full
    disk) leaves the previous page and nothing else; a page written is readable as
    any file the user writes (the umask's permissions, not a temporary file's)."""
    import errno
    import os
    folder = tmp_path / "run"
    shutil.copytree(run_dir, folder)
    before = (folder / "report.html").read_bytes()
    names = sorted(p.name for p in folder.iterdir())
    original = Path.write_text

    def half_then_full(self, text, *args, **kwargs):
        original(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(Path, "write_text", half_then_full)
    with pytest.raises(OSError):
        write_report(folder)
    monkeypatch.undo()
    assert sorted(p.name for p in folder.iterdir()) == names
    assert (folder / "report.html").read_bytes() == before
    (folder / "report.html").unlink()
    write_report(folder)
    (folder / "plain").write_text("")
    assert (folder / "report.html").stat().st_mode == (folder / "plain").stat().st_mode
    assert os.access(folder / "report.html", os.R_OK)


DGX = """
nodes:
  - name_prefix: dgx
    replicas: 2
    cpu_milli: 192000
    memory_mib: 2097152
    topology: dgx-h100
"""
PCIE = """
nodes:
  - name_prefix: box
    replicas: 2
    cpu_milli: 64000
    memory_mib: 524288
    topology: pcie-4gpu
"""
MULTI = "name,arrival,duration,gpu,gpumem,gpucores\n" + "".join(
    f"m{i},{i * 20},{600 + 30 * i},{2 + 2 * (i % 2)},8000,50\n" for i in range(16))


@pytest.fixture(scope="module")
def topology_compares(tmp_path_factory) -> dict[str, tuple[Path, str, str]]:
    """Per topology: a comparison folder, and a run's console and report headline."""
    base = tmp_path_factory.mktemp("topology")
    (base / "t.csv").write_text(MULTI)
    out = {}
    for name, cluster in (("nvswitch", DGX), ("pcie", PCIE)):
        (base / f"{name}.yaml").write_text(textwrap.dedent(cluster))
        assert main(["compare", str(base / f"{name}.yaml"), str(base / "t.csv"),
                     "--gpu-policy", "spread", "--gpu-policy", "topology-aware",
                     "--out", str(base / f"{name}-cmp"), "--no-progress"]) == 0
        console = io.StringIO()
        with contextlib.redirect_stdout(console):
            assert main(["run", str(base / f"{name}.yaml"), str(base / "t.csv"),
                         "--out", str(base / f"{name}-run"), "--no-progress"]) == 0
        page = (base / f"{name}-run" / "report.html").read_text(encoding="utf-8")
        out[name] = (base / f"{name}-cmp", console.getvalue(),
                     _section(page, "Headline figures").split("<details>")[0])
    return out


def _headers(table: str) -> list[str]:
    return re.findall(r"<th[^>]*>([^<]*)</th>", table.split("</thead>")[0])


def test_the_compare_report_puts_policy_waits_and_utilisation_first(topology_compares):
    folder, _, _ = topology_compares["pcie"]
    page = (folder / "report.html").read_text(encoding="utf-8")
    tables = re.findall(r"<table>.*?</table>", _section(page, "The comparison"), re.S)
    assert len(tables) == 3                     # headline, placement, every figure
    assert _headers(tables[0])[:5] == ["policy", "seed", "pending p50 (s)", "pending p99 (s)",
                                       "GPUs with a tenant, mean %"]
    assert len(_headers(tables[0])) <= 10       # fits a 1,280 px window (browser test below)
    assert _headers(tables[1])[:3] == ["policy", "seed", "multi-GPU pods"]
    assert "across PCIe switches %" in _headers(tables[1])
    table = pd.read_parquet(folder / "compare.parquet")
    first = re.findall(r"<td[^>]*>([^<]*)</td>", tables[0].split("<tbody>")[1])
    n = len(_headers(tables[0]))
    assert first[:n][0] == table["policy"].iloc[0]
    assert first[:n][3] == f"{table['pending_p99_s'].iloc[0]:,.1f}"
    # every figure still there, after the headline ones
    assert set(_headers(tables[0])) < set(_headers(tables[2]))


def test_topology_wording_fits_nvswitch_nodes(topology_compares):
    folder, console, headline = topology_compares["nvswitch"]
    placed = [ln for ln in console.splitlines() if "multi-GPU pods placed" in ln]
    assert placed and "every card pair on NVLink (PCIe switches carry none of their GPU-GPU " \
        "traffic)" in placed[0]
    assert "across PCIe switches" not in console
    assert "every card pair on NVLink" in headline and "across PCIe switches" not in headline
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert "joined by NVLink (NVSwitch or direct), so crossing PCIe switches carries none" in page
    assert "across PCIe switches %" not in page                   # no column of 100 %
    # where cards lack NVLink, crossing switches matters and is said, with the pairs
    _, console, headline = topology_compares["pcie"]
    for text in (console, headline):
        assert re.search(r"\d+\.\d % across PCIe switches, 100\.0 % of card pairs without "
                         "NVLink", text), text
        assert "every card pair on NVLink" not in text


@pytest.mark.skipif(_chromium() is None, reason="no Chromium on this machine (Debian's "
                    "'chromium' package; .ci/run installs it in CI)")
def test_the_compare_headline_fits_a_1280_px_window(topology_compares, tmp_path):
    folder, _, _ = topology_compares["nvswitch"]
    probe = tmp_path / "fit.html"
    probe.write_text(
        "<!DOCTYPE html><html><head><title>waiting</title></head><body style='margin:0'>"
        f"<iframe id='r' src='{(folder / 'report.html').as_uri()}' width='1280' height='800'>"
        "</iframe><script>"
        "document.getElementById('r').addEventListener('load', function () {"
        " var t = this.contentDocument.querySelectorAll('table');"
        " document.title = 'right ' + Math.ceil(t[0].getBoundingClientRect().right) + ' ' +"
        " Math.ceil(t[1].getBoundingClientRect().right); });"
        "</script></body></html>")
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--allow-file-access-from-files"]
    dom = subprocess.run([_chromium(), *flags, "--virtual-time-budget=10000", "--dump-dom",
                          probe.as_uri()], capture_output=True, text=True, timeout=120)
    right = re.search(r"<title>right (\d+) (\d+)</title>", dom.stdout)
    assert right, dom.stdout[:500]
    assert int(right[1]) <= 1280 and int(right[2]) <= 1280
