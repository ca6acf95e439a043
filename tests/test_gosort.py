"""Checks hamisim.hami.gosort and hamisim/_gosort.pyx against real Go output.

tests/data/go_sort_orders.json was produced by tools/go_sort_vectors with
the Go toolchain named in its "go_version" field; every case records the
keys and the order of original positions that sort.Sort produced when
comparing keys only.  Both the Python port and the Cython kernel must
reproduce each order exactly, ties included.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import random
import shlex
import shutil
import sysconfig
from pathlib import Path

import pytest

import hamisim.hami.gosort as gosort
from hamisim.hami.gosort import bits_len, go_sort, go_sorted

TESTS_DIR = Path(__file__).resolve().parent
ROOT_DIR = TESTS_DIR.parent      # holds hamisim/*.pxd, which the harness cimports
VECTORS = TESTS_DIR / "data" / "go_sort_orders.json"
HARNESS_PYX = TESTS_DIR / "_gosort_harness.pyx"

with VECTORS.open() as fh:
    _DATA = json.load(fh)
CASES = _DATA["cases"]


def _case_id(case):
    return f"{case['name']}-n{case['n']}"


def _python_order(keys):
    order = list(range(len(keys)))
    go_sort(order, lambda x, y: keys[x] < keys[y])
    return order


# ---------------------------------------------------------------------------
# The recorded vectors


def test_vectors_come_from_go_1_26():
    assert _DATA["go_version"].startswith("go1.26")
    assert len(CASES) > 500
    sizes = {c["n"] for c in CASES}
    assert set(range(41)) <= sizes and {50, 100, 200} <= sizes
    for c in CASES:
        assert len(c["keys"]) == c["n"] == len(c["perm"])
        assert sorted(c["perm"]) == list(range(c["n"]))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_python_port_matches_go(case):
    assert _python_order(case["keys"]) == case["perm"]


def test_vectors_exercise_every_branch(monkeypatch):
    """The vector set must reach all the places where ties can be reordered."""
    hits = collections.Counter()

    def count(name):
        real = getattr(gosort, name)

        def wrapper(*args, **kwargs):
            hits[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(gosort, name, wrapper)

    names = [
        "_insertion_sort",
        "_heap_sort",
        "_break_patterns",
        "_partition_equal",
        "_partition",
        "_reverse_range",
        "_partial_insertion_sort",
    ]
    for name in names:
        count(name)
    for case in CASES:
        _python_order(case["keys"])
    for name in names:
        assert hits[name] > 0, f"no recorded case reaches {name}"


def test_vectors_pin_the_go_1_24_xorshift(monkeypatch):
    """Go < 1.24 used a (13, 17, 5) xorshift in breakPatterns; the recorded
    orders must be able to tell the difference."""

    class OldXorShift(gosort._XorShift):
        def next(self):
            r = self.state
            r ^= (r << 13) & gosort._U64
            r ^= r >> 17
            r ^= (r << 5) & gosort._U64
            self.state = r
            return r

    monkeypatch.setattr(gosort, "_XorShift", OldXorShift)
    differing = [c for c in CASES if _python_order(c["keys"]) != c["perm"]]
    assert differing, "vectors do not depend on the xorshift constants"


# ---------------------------------------------------------------------------
# Properties of the Python port


def test_bits_len_matches_go():
    assert [bits_len(x) for x in (0, 1, 2, 3, 4, 7, 8, 12, 13, 200)] == [
        0, 1, 2, 2, 3, 3, 4, 4, 4, 8,
    ]


@pytest.mark.parametrize("seed", range(40))
def test_result_is_sorted_permutation(seed):
    rnd = random.Random(seed)
    n = rnd.choice([0, 1, 2, 5, 12, 13, 17, 49, 50, 51, 64, 100, 257, 1000])
    span = rnd.choice([1, 2, 3, 7, n + 1])
    # Cards: (free_mem, used_cores, uuid); the comparator ignores the uuid,
    # like HAMi's, so many cards tie.
    cards = [(rnd.randrange(span), rnd.randrange(3), f"GPU-{i}") for i in range(n)]

    def less(x, y):
        return (x[0], -x[1]) < (y[0], -y[1])

    out = list(cards)
    go_sort(out, less)
    assert sorted(out, key=lambda c: c[2]) == sorted(cards, key=lambda c: c[2])
    assert all(not less(out[i + 1], out[i]) for i in range(len(out) - 1))
    assert go_sorted(cards, less) == out
    assert [c[2] for c in cards] == [f"GPU-{i}" for i in range(n)]  # input untouched


def test_only_calls_less_with_list_elements():
    items = [object() for _ in range(300)]
    weight = {id(o): i % 4 for i, o in enumerate(items)}
    member = set(map(id, items))

    def less(x, y):
        assert id(x) in member and id(y) in member
        return weight[id(x)] < weight[id(y)]

    out = list(items)
    go_sort(out, less)
    assert [weight[id(o)] for o in out] == sorted(weight[id(o)] for o in items)


def test_non_strict_comparator_terminates():
    # Not a strict weak ordering; Go still terminates and so must the port.
    rnd = random.Random(7)
    for n in (13, 60, 300):
        data = [rnd.randrange(4) for _ in range(n)]
        out = list(data)
        go_sort(out, lambda x, y: x <= y)
        assert sorted(out) == sorted(data)


# ---------------------------------------------------------------------------
# The Cython kernel, through a test-only harness compiled at test time


def _c_compiler():
    """Return the C compiler command setuptools would use, or None if absent."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    argv = shlex.split(cc)
    if argv and shutil.which(argv[0]):
        return argv[0]
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    if _c_compiler() is None:
        pytest.skip(
            "no C compiler on PATH: cannot build tests/_gosort_harness.pyx "
            "to test the Cython kernel hamisim/_gosort.pyx"
        )
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    build_dir = tmp_path_factory.mktemp("gosort_harness")
    src = build_dir / HARNESS_PYX.name
    shutil.copyfile(HARNESS_PYX, src)
    ext_modules = cythonize(
        [Extension("_gosort_harness", [str(src)])],
        include_path=[str(ROOT_DIR)],
        compiler_directives={"language_level": 3},
        force=True,
        quiet=True,
    )
    dist = Distribution({"name": "gosort_harness", "ext_modules": ext_modules})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = str(build_dir)
    cmd.build_temp = str(build_dir / "tmp")
    cmd.inplace = False
    dist.run_command("build_ext")
    so_path = cmd.get_ext_fullpath("_gosort_harness")
    spec = importlib.util.spec_from_file_location("_gosort_harness", so_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cython_kernel_matches_go(harness):
    mismatches = [_case_id(c) for c in CASES if harness.sort_perm(c["keys"]) != c["perm"]]
    assert not mismatches, f"{len(mismatches)} cases differ, e.g. {mismatches[:5]}"


@pytest.mark.parametrize("seed", range(10))
def test_cython_kernel_matches_python_port(harness, seed):
    rnd = random.Random(1000 + seed)
    for n in (0, 1, 13, 50, 333, 2048):
        span = rnd.choice([1, 2, 3, 10, max(n, 1)])
        keys = [rnd.randrange(span) for _ in range(n)]
        if seed % 3 == 1:
            keys.sort()
        elif seed % 3 == 2:
            keys.sort(reverse=True)
            if n > 2:
                keys[n // 2], keys[-1] = keys[-1], keys[n // 2]
        assert harness.sort_perm(keys) == _python_order(keys)
