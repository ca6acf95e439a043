"""Type stub of hamisim/_openmetrics.pyx (the OpenMetrics writer's line assembly)."""
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

def lines(heads: U8, head_at: I64, values: U8, value_at: I64, stamps: U8, stamp_at: I64,
          head: I64, value: I64, stamp: I64, out: U8) -> int:
    """Line p = heads piece head[p] + values piece value[p] + stamps piece stamp[p],
    written one after the other into out; returns the bytes written."""
