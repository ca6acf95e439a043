"""Device families (hamisim.devices): which cards HAMi's NVIDIA backend counts, and a
run's every GPU figure counting only those.

HAMi v2.10.0 offers a request of its NVIDIA backend the cards whose type contains
``NVIDIA`` case-insensitively (``getNodeResources``); hamisim simulates that backend
only, so a card typed ``Ascend910B`` or ``MLU370`` is never scheduled and must not
dilute utilisation, fragmentation or offered load.
"""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.devices import SIMULATED_FAMILIES, backend_of, device_family, is_simulated, offered_to

#: the simulated families' words as the card-type warning lists them
WORDS = ", ".join(repr(w) for w in SIMULATED_FAMILIES)

# -- the family rule ------------------------------------------------------------


@pytest.mark.parametrize("card_type, family", [
    ("NVIDIA-Tesla T4", "NVIDIA"), ("NVIDIA", "NVIDIA"), ("nvidia a100-sxm4-40gb", "NVIDIA"),
    ("Tesla-T4", None),                     # a T4 registered without the vendor word
    ("", None),
    ("Ascend910B", "Ascend"), ("MLU370", "MLU"), ("DCU-Z100", "DCU"), ("BI-V150", "BI-V150"), ("BI-V999", "BI-V"),
        ("AMD_Instinct_MI300X", "AMD"),
    # Go's strings.ToLower keeps a dotless i: HAMi does not see 'nvidia' in it
    ("NV\u0131DIA-T4", None),
])
def test_family_is_hamis_case_insensitive_substring_rule(card_type, family):
    assert device_family(card_type) == family
    assert is_simulated(card_type) == (family in SIMULATED_FAMILIES)
    assert offered_to("NVIDIA", card_type) == (family == "NVIDIA")


def test_other_families_are_named_for_the_warning_only():
    # (910B is no chip of the chart's vnpus list; 910B3 is simulated)
    assert backend_of("Ascend910B") == ("HAMi's Huawei Ascend (a chip outside the chart's vnpus "
                                        "list) backend, pkg/device/ascend")
    assert backend_of("Ascend910B3") is None
    assert backend_of("Metax-SGPU") == "HAMi's MetaX backend, pkg/device/metax"
    assert backend_of("MLU370-X8") is None          # simulated: Cambricon's word
    assert backend_of("NVIDIA-H100") is None and backend_of("Tesla-T4") is None


def test_a_family_simulated_later_is_counted_but_never_offered_to_nvidia_pods(monkeypatch):
    # issue 37 adds backends to SIMULATED_FAMILIES: their cards become GPUs in the
    # totals, while the NVIDIA vendor filter of Fit keeps to NVIDIA's own cards
    import hamisim.devices as devices
    from hamisim import Card
    cards = [Card("a", type="NVIDIA-T4"), Card("b", type="MLU370"), Card("c", type="DCU")]
    monkeypatch.setattr(devices, "SIMULATED_FAMILIES", ("NVIDIA", "MLU"))
    assert devices.simulated_flags(cards) == [True, True, False]
    assert devices.nvidia_flags(cards) == [True, False, False]
    assert device_family("MLU370") == "MLU" and backend_of("MLU370") is None


# -- a run counts only the GPUs -------------------------------------------------

#: 4 T4s and two nodes of Ascend cards, which no pod here can use ...
WITH_NPUS = """\
nodes:
  - name: t4
    cpu_milli: 64000
    gpus: 4
    card: {devmem: 15360, type: NVIDIA-Tesla T4}
  - name_prefix: npu
    replicas: 2
    cpu_milli: 64000
    gpus: 8
    card: {devmem: 65536, type: Ascend910B}
"""
#: ... and the same cluster with those nodes holding no cards at all
WITHOUT = WITH_NPUS.split("    gpus: 8\n")[0]
TRACE = "name,arrival,duration,gpu,gpumem,gpucores,cpu_milli\n" + "".join(
    f"p{k},{20 * k},{300 + 40 * (k % 5)},{1 + k % 2},{2000 + 1000 * (k % 3)},{25 * (1 + k % 3)},"
    "1000\n" for k in range(30))

#: the figures that have a GPU count in them
SERIES = ["hami_gpu_total", "hami_gpu_allocated", "hami_gpu_zero_tenant", "nodes_gpu_idle",
          "hami_vgpu_slots_total", "hami_gpu_memory_total_bytes", "hami_gpu_core_total",
          "hami_gpu_core_allocated_ratio", "unallocated_gpu", "frag_gpu", "unfit_gpu",
          "stranded_gpu", "frag_pct_of_capacity", "stranded_pct_of_capacity"]


def _run(tmp_path, name: str, cluster: str, *extra: str) -> tuple[dict, pd.DataFrame]:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "cluster.yaml").write_text(cluster)
    (folder / "trace.csv").write_text(TRACE)
    out = folder / "out"
    assert main(["run", str(folder / "cluster.yaml"), str(folder / "trace.csv"), "--out",
                 str(out), "--format", "csv", "--no-progress", *extra]) == 0
    return json.loads((out / "summary.json").read_text()), pd.read_csv(out / "timeseries.csv")


def test_cards_hamis_nvidia_backend_never_offers_count_in_no_figure(tmp_path, capsys):
    want, want_ts = _run(tmp_path, "without", WITHOUT)
    capsys.readouterr()
    got, ts = _run(tmp_path, "with", WITH_NPUS)
    out, err = capsys.readouterr()
    assert "cluster.yaml:10: warning: card type 'Ascend910B' (16 cards on nodes npu-0, " \
           "npu-1) contains none of " + WORDS in err
    assert "3 nodes, 4 GPUs, and 16 cards not counted (no simulated family: 16 Ascend910B)" in out
    assert got["cluster"]["gpus"] == want["cluster"]["gpus"] == 4
    assert got["cluster"]["cards_not_counted"] == 16
    assert "cards_not_counted" not in want["cluster"]
    assert ts["hami_gpu_total"].eq(4).all() and ts["hami_gpu_allocated"].max() == 4
    pd.testing.assert_frame_equal(ts[SERIES], want_ts[SERIES])
    for key, value in want["results"].items():
        if key != "groups":
            assert got["results"][key] == value, key
    assert [(g["group"], g["gpus"]) for g in got["results"]["groups"]] == [
        ("NVIDIA-Tesla T4", 4), ("npu", 0)]
    # a group of no GPUs has no shares to print
    assert re.search(r"\n  npu +0 +- +- +- +-\n", out), out
    # the Python engine, checking the meter against its readable twin after every event
    checked, checked_ts = _run(tmp_path, "checked", WITH_NPUS, "--check")
    assert checked["inputs"]["engine"] == "python"
    pd.testing.assert_frame_equal(checked_ts[SERIES], ts[SERIES])
    assert checked["results"] == got["results"]
