"""Kubernetes quantities (hamisim.kube.quantity): parsing and unit conversion."""
from __future__ import annotations

from fractions import Fraction

import pytest

from hamisim.kube.quantity import cpu_milli, memory_mib, parse_memory_mib, parse_quantity


@pytest.mark.parametrize("text,value", [
    ("500m", Fraction(1, 2)), ("2", Fraction(2)), ("1.5", Fraction(3, 2)), ("2Gi", 2 * 2**30),
    ("128Mi", 128 * 2**20), ("63997844Ki", 63997844 * 1024), ("1e3", 1000),
    ("1E-3", Fraction(1, 1000)),
    ("3k", 3000), ("1M", 10**6), ("100u", Fraction(1, 10**4)), (".5", Fraction(1, 2)),
    ("+4", 4), ("-1", -1)])
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "5Mb", "2 Gi", "Gi", "1e", "0x10", "1Kii"])
def test_parse_quantity_rejects(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_rounding_follows_kubernetes():
    assert cpu_milli(parse_quantity("0.0001")) == 1          # MilliValue rounds up
    assert cpu_milli(parse_quantity("15900m")) == 15900
    assert memory_mib(parse_quantity("1025Ki")) == 2        # requests round up
    assert memory_mib(parse_quantity("1025Ki"), round_up=False) == 1   # capacity down


@pytest.mark.parametrize("text,mib", [("16Gi", 16384), ("16G", 15259), ("512Mi", 512),
                                      ("1.5Gi", 1536), ("1025Ki", 2), ("3k", 1)])
def test_memory_suffixes_give_mib_rounded_up(text, mib):
    assert parse_memory_mib(text) == mib


@pytest.mark.parametrize("text", ["4000", "1e3", "500m", "2"])
def test_texts_without_a_memory_suffix_are_left_to_the_caller(text):
    assert parse_memory_mib(text) is None


@pytest.mark.parametrize("text", ["-2Gi", "1.2.3Gi", "Gi"])
def test_bad_memory_quantities_are_rejected(text):
    with pytest.raises(ValueError):
        parse_memory_mib(text)
