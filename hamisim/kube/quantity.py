"""Kubernetes resource quantities (``500m``, ``2Gi``, ``1.5``, ``1e3``), parsed exactly.

The API server's rules: a decimal number with an optional binary (``Ki`` ..
``Ei``), decimal (``k`` .. ``E``, ``m``, ``u``, ``n``) or exponent suffix.
:func:`cpu_milli` and :func:`memory_mib` convert to the units hamisim uses,
rounding as kube-scheduler does for requests (up) or as hamisim does for
allocatable capacity (down, never more than the node has).
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = ["parse_quantity", "cpu_milli", "memory_mib", "parse_memory_mib", "MEMORY_SUFFIXES"]

_QUANTITY = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|"
                       r"[eE][+-]?\d+)?")
_SUFFIX = {"Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30),
           "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
           "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
           "": Fraction(1), "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
           "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18)}


def parse_quantity(text: str) -> Fraction:
    """A Kubernetes quantity (``500m``, ``2Gi``, ``1.5``, ``1e3``) as an exact fraction.

    Raises ``ValueError`` for anything else.
    """
    m = _QUANTITY.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity (e.g. 500m, 2Gi, 4)")
    sign, number, suffix = m.group(1), m.group(2), m.group(3) or ""
    value = Fraction(number)
    if suffix[:1] in ("e", "E"):
        exp = int(suffix[1:])
        if abs(exp) > 60:
            raise ValueError(f"{text!r}: exponent out of range")
        value *= Fraction(10) ** exp
    else:
        value *= _SUFFIX[suffix]
    return -value if sign == "-" else value


def cpu_milli(q: Fraction) -> int:
    """Milli-CPU, rounded up (Kubernetes ``MilliValue``)."""
    return math.ceil(q * 1000)


def memory_mib(q: Fraction, round_up: bool = True) -> int:
    """MiB of a byte quantity: up for requests, down for allocatable capacity."""
    mib = q / 2**20
    return math.ceil(mib) if round_up else math.floor(mib)


#: suffixes that make a quantity an amount of bytes
MEMORY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E")


def parse_memory_mib(text: str) -> int | None:
    """MiB of a byte quantity written with a memory suffix (``16Gi`` = 16384,
    ``16G`` = 15259, rounded up as a request), or ``None`` when ``text`` has
    no such suffix (a bare number is MiB by hamisim's convention and is the
    caller's to read). Raises ``ValueError`` for a suffixed text that is not
    a quantity, or a negative one."""
    stripped = text.strip()
    if not stripped.endswith(MEMORY_SUFFIXES):
        return None
    q = parse_quantity(stripped)
    if q < 0:
        raise ValueError(f"{text!r} is negative")
    return memory_mib(q)
