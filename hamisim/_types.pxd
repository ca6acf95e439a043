# cython: language_level=3
"""The kernel's C structs, shared by the compiled modules (no runtime module:
nothing here but declarations).

Cards is the cluster as flat arrays (hamisim._core.CardTable fills it), Pod one
attempt's request (hamisim._core.PodSpec), NodeAgg a node's aggregates for the
fast choice, Node one node's slice of Cards, Scratch the kernel's buffers.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


ctypedef struct Cards:
    # The whole cluster (or one test node): static fields, live usage, pairs.
    int n_nodes
    const int64_t* node_start
    const int64_t* pair_start
    const int64_t* count
    const int64_t* devmem
    const int64_t* devcore
    const int64_t* numa
    const int64_t* index
    const uint8_t* health
    const uint8_t* cordoned
    # per card: the device families it is offered to, bits 1 << fid
    # (hamisim.devices.offer_mask); the family whose word its type equals,
    # fid + 1 (0: none; hamisim.devices.exact_family)
    const uint32_t* offer
    const uint8_t* type_exact
    const int32_t* type_id
    const int32_t* mode_id
    const int64_t* used
    const int64_t* usedmem
    const int64_t* usedcores
    const int64_t* pair
    const int64_t* alloc_cpu
    const int64_t* alloc_mem
    const int64_t* req_cpu
    const int64_t* req_mem
    # per node: 0 = HAMi's per-container list drops GPU-less containers, 1 =
    # it keeps them (hamisim.hami.reference.aligned_usage), 2 = the corrected
    # accounting (every container counted as what it is); read by the quota
    # check only (NULL: 1 on every node)
    const uint8_t* aligned
    # MIG (hamisim.hami.mig): per row whether the card is in mig mode, its
    # profiles [mig_p0, mig_p1) in selectMigCandidate's order, the placements
    # in use as a bit mask (live) and per slot how many instances cover it
    # (NULL without MIG cards); per profile its memory, cores and placements
    # [mp_pl0, mp_pl1) in HAMi's try order, per placement its bits; per node
    # how many vendor cards are in mig mode
    const uint8_t* is_mig
    const int64_t* mig_p0
    const int64_t* mig_p1
    const uint64_t* mig_occ
    int32_t* mig_cnt
    const int64_t* mp_mem
    const int64_t* mp_core
    const int64_t* mp_pl0
    const int64_t* mp_pl1
    const uint64_t* pl_mask
    const int64_t* n_mig
    # what-if (not HAMi): per row how many mutex-reserve pods hold the card (live)
    const int64_t* reserved
    # Ascend (hamisim.devices.ascend): per row the card's NetworkID (-1: none);
    # per node whether it runs hami-vnpu-core
    const int64_t* network
    const uint8_t* vnpu_core
    # Kunlunxin: per node whether every card's type contains "kunlun" (its
    # ScoreNode is 0 elsewhere)
    const uint8_t* kunlun_only


ctypedef struct Pod:
    int n_cont
    int n_init
    const int64_t* req         # n_cont x Q_WIDTH
    float ws
    float wc
    float wm
    int mode
    int n_chain
    int chain[3]
    bint sort_numa_bind
    bint fit_numa_bind
    bint mutex
    bint topology
    bint mig_request           # isMIGRequest's pod part: no vgpu-mode, or one naming mig
    bint hami_core             # Ascend: huawei.com/vnpu-mode is hami-core
    # the largest family node score (ScoreNode: Ascend 910's networks) the pod
    # can add to a node's base score; 0: none, the node score is the base score
    float bonus_max
    const uint8_t* type_ok     # per type id
    const uint8_t* mode_ok     # per mode id
    const uint8_t* uuid_ok     # per card row
    int64_t cpu
    int64_t mem
    # kube-scheduler's NodeUnschedulable / TaintToleration / NodeAffinity per
    # node: 0 = passes, k > 0 = rejected with reason k (NULL: every node passes)
    const int32_t* gate
    # Necessary conditions for the pod to fit on a node (see NodeAgg): every
    # container that asks for cards needs at least one card that could take
    # it, and as many distinct usable cards as it asks for.
    int64_t need_n             # distinct eligible cards (largest nums)
    int64_t need_mem           # free memory, MiB (largest absolute request)
    int64_t need_pct           # memory percentage (largest; -1 = none)
    int64_t need_cores         # free cores (largest min(coresreq, 100))
    uint64_t type_mask         # bits (type_id % 64) the pod accepts
    uint64_t mode_mask         # bits (mode_id % 64) the pod accepts
    # HAMi's ResourceQuota check in Fit (hamisim.hami.quota): the namespace's
    # usage without this pod and its limits (-1 = not set); set per attempt
    bint quota
    int64_t q_used_mem
    int64_t q_used_cores
    int64_t q_lim_mem
    int64_t q_lim_cores
    # the memo of failed evaluations (_memo.pyx), per node of memo_owner's
    # cluster: the node version of the failure and its outcome id
    int64_t* memo_ver
    int32_t* memo_id
    uint64_t memo_owner
    bint memo_wanted           # it failed once: a memo is worth its memory
    # the ResourceQuota state the memo's outcomes hold for (quota, used and
    # limits as above; all 0 when the check is off): another state empties it
    int64_t memo_q[5]


ctypedef struct NodeAgg:
    # Per-node aggregates, refreshed on every change of the node's usage.
    # Eligible card: vendor, healthy, not cordoned, a free slot: every card
    # Fit can pick is one. The free amounts are maxima over eligible cards
    # taken per dimension (so a relaxation: a node failing them cannot fit).
    float score                # node base score (§5.3), exactly _node_base_score
    int32_t n_elig
    int32_t n_zero             # eligible cards without a tenant (mutex)
    int64_t max_pct            # largest pct with floor(devmem*pct/100) <= free (-1 none)
    int64_t max_mem            # largest devmem - usedmem
    int64_t max_cores          # largest devcore - usedcores
    uint64_t types             # bits (type_id % 64) of eligible cards
    uint64_t modes


ctypedef struct Cand:
    float score
    int j                      # window position


ctypedef struct Node:
    # One node's slice of Cards, node-local pointers.
    int k
    int row0
    const int64_t* count
    const int64_t* devmem
    const int64_t* devcore
    const int64_t* numa
    const int64_t* index
    const uint8_t* health
    const uint8_t* cordoned
    const uint32_t* offer
    const uint8_t* type_exact
    const int32_t* type_id
    const int32_t* mode_id
    const int64_t* used
    const int64_t* usedmem
    const int64_t* usedcores
    const int64_t* pair
    int aligned                # Cards.aligned of the node
    int64_t n_mig
    const uint8_t* is_mig
    const int64_t* mig_p0
    const int64_t* mig_p1
    const uint64_t* mig_occ
    const int64_t* mp_mem      # global profile / placement tables
    const int64_t* mp_core
    const int64_t* mp_pl0
    const int64_t* mp_pl1
    const uint64_t* pl_mask
    const int64_t* reserved    # Cards.reserved of the node's rows
    const int64_t* network     # Cards.network of the node's rows
    int vnpu_core              # Cards.vnpu_core of the node
    int kunlun_only            # Cards.kunlun_only of the node


ctypedef struct Scratch:
    int cap_k                  # >= cards of any node
    int cap_c                  # >= containers of the pod
    int cap_p                  # >= picks of one container (MIG cards take several)
    int64_t* w_used            # working usage copy (cap_k)
    int64_t* w_usedmem
    int64_t* w_usedcores
    float* score               # card scores (cap_k)
    int* perm                  # the node's card list (cap_k)
    int* pk_pos                # picks of the current Fit (cap_k)
    int64_t* pk_mem
    int64_t* pk_cores
    int* combo                 # topology combinations (cap_k)
    int* best_combo
    int* out_n                 # per container: number of picks (cap_c)
    int* out_pos               # per container: picks at [c * cap_p ...]
    int64_t* out_mem
    int64_t* out_cores
    int32_t* counts            # Fit reason histogram of the failure (N_REASONS)
    int64_t n_cards            # cards handed to the failing Fit
    float node_score
    # the quota check's view of the pod's earlier containers on this node, per
    # card: the largest init-class entry and the sum of app-class entries
    # (CollapseInitContainerUsage over HAMi's list), their collapsed total,
    # and whether the current container's entry counts as an init container
    int64_t* qi_mem            # (cap_k)
    int64_t* qi_cores
    int64_t* qa_mem
    int64_t* qa_cores
    int64_t q_base_mem
    int64_t q_base_cores
    bint q_cur_init
    int64_t* qc_mem            # the current container's picks so far, per card (cap_k)
    int64_t* qc_cores
    # MIG: working placements in use per card (cap_k), the same plus this Fit's
    # picks (CustomFilterRule's replay), and per pick the profile and placement
    # AddResourceUsage chose (-1 on other cards; cap_c * cap_p)
    uint64_t* w_occ
    uint64_t* q_occ
    int32_t* out_prof
    int32_t* out_pl
    # Moore Threads' customFilterRule: the card (position) every earlier Moore
    # Threads pick of this pass holds, -1 none yet, -2 several cards
    int pin
    # Ascend's choices after the walk: per pick two sort keys (cap_p)
    int64_t* sel_a
    int64_t* sel_b
