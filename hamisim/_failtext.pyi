"""Type stub of hamisim/_failtext.pyx (the FailedScheduling text built in C); C
types in trailing comments."""
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from hamisim._core import Core

U8 = npt.NDArray[np.uint8]


class FailText:
    """kube-scheduler's FailedScheduling text of the kernel's last failed attempt,
    built in C (_failtext.pyx); Python is asked only for new reason and PostFilter texts."""

    n_built: int                      # texts built
    n_declined: int                   # texts left to the caller's Python
    def __init__(
        self, core: Core,
        wants_gpu: U8,                                # per template
        postfix_class: Any,                           # int32 per template: one PostFilter text
        reason_of: Callable[[int, Any], str | None],  # (kind, value) -> reason, None declines
        postfix_of: Callable[[int, int], str],        # (template, potential nodes) -> text
    ) -> None: ...
