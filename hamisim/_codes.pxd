# cython: language_level=3
"""The compiled modules' shared codes (C enums), cimported by each of them.

Their Python mirrors are in hamisim._core (CODES, REASON_ORDER, ST_NAMES,
ROW_COLUMNS), which hamisim.sim.kernel checks against hamisim.hami.policy,
hamisim.hami.decision and hamisim.hami.noderows at import.
"""

cdef enum:
    MODE_CHAIN = 0
    SINGLE_MUTEX = 1
    SINGLE_BINPACK = 2
    SINGLE_SPREAD = 3
    KEY_BINPACK = 1
    KEY_SPREAD = 2
    KEY_NUMA = 3

# Reason codes: the order of hamisim.hami.decision.REASONS.
cdef enum:
    R_NOT_HEALTH = 0
    R_CORDONED = 1
    R_TYPE = 2
    R_NUMA = 3
    R_UUID = 4
    R_SLICING = 5
    R_EXCLUSIVE = 6
    R_MEMORY = 7
    R_CORE = 8
    R_COMPUTE_UNITS = 9
    R_ALLOCATED = 10
    R_QUOTA = 11
    R_MIG = 12
    R_RESERVED = 13            # what-if mutex-reserve (hamisim.registry.RESERVE_TOKEN)
    R_CUSTOM = 14              # CardNotFoundCustomFilterRule (Moore Threads' one card a pod)
    R_MODE = 15                # ModeNotFit (Ascend's hami-core on a node without hami-vnpu-core)
    N_REASONS = 16
    LISTED_ZERO = -1           # a count HAMi lists with 0 (hamisim.hami.decision.LISTED_ZERO)

# Outcome of one node (and of one container on it).
cdef enum:
    ST_FIT = 0
    ST_FIT_FAILED = 1          # Fit's per-card reason histogram
    ST_INSUFFICIENT = 2        # "NodeInsufficientDevice"
    ST_TYPE_NOT_FOUND = 3      # "Device type not found"
    ST_UNREGISTERED = 4        # "node unregistered"
    ST_MIG_READD = 5           # AddResourceUsage found no MIG placement (cannot happen)

# Request row columns (hamisim.sim.arrays.REQ_FIELDS).
cdef enum:
    Q_NUMS = 0
    Q_MEM = 1
    Q_PCT = 2
    Q_CORES = 3
    Q_FLAGS = 4
    Q_FAM = 5                  # the request's device family (hamisim.devices.Family.fid)
    Q_WIDTH = 6
    QF_REGISTERED = 1
    QF_WORD = 2                # the request's type is its family's common word
    FAM_NVIDIA = 0             # hamisim.devices.nvidia.NVIDIA.fid
    FAM_AMD = 6                # hamisim.devices.amd.AMD.fid (cores are Compute Units)
    FAM_BIREN = 8              # hamisim.devices.biren.BIREN.fid (slots only)
    FAM_MTHREADS = 9           # hamisim.devices.mthreads.MTHREADS.fid (case-sensitive type,
                               # one card a pod)
    FAM_ASCEND = 10            # hamisim.devices.ascend.FAMILIES: fids 10 .. 16, the 910
    FAM_910C = 15              # chips 10 .. 15 (NetworkID), 910C (module pairs), then 310P
    FAM_ASCEND_LAST = 16
    NETWORK_WEIGHT = 10        # ScoreNode's factor (Ascend910NetworkWeight)
    FAM_KUNLUN = 17            # hamisim.devices.kunlun.KUNLUN.fid (whole cards, graghSelect)
    FAM_XPU = 18               # hamisim.devices.kunlun.XPU.fid (vXPU slices, graghSelect)
    BUBBLE_MAX = 3000          # Kunlunxin's ScoreNode at most
    TYPE_CASE_MISMATCH = 0x80  # Cards.type_exact's flag: the card's type holds the
                               # case-sensitive family's word in another case only

cdef enum:
    NO_PERCENTAGE = 101
    MANY_CARDS = 1 << 30       # NodeAgg's count on a node with a MIG card

# Core.rank_attempt's row columns (not HAMi): hamisim.hami.noderows.INT_COLUMNS
# and FLOAT_COLUMNS, in this order (kernel.py checks them at import).
cdef enum:
    RW_INDEX = 0
    RW_CARDS = 1
    RW_GPUMEM = 2
    RW_GPUMEM_FREE = 3
    RW_GPUCORES = 4
    RW_GPUCORES_FREE = 5
    RW_TENANTS = 6
    RW_USED_CARDS = 7
    RW_PICK_NUMAS = 8
    RW_NI = 9
    RW_HAMI_SCORE = 0
    RW_CPU_FREE = 1
    RW_MEMORY_FREE = 2
    RW_NF = 3
