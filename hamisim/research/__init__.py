"""The research node policies of the FGD paper, as node policies of hamisim.

Weng et al., *Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent*, USENIX ATC '23, compare six node policies on
the openb trace: ``random``, ``dotprod``, ``gpuclustering``, ``gpupacking``,
``bestfit`` and ``fgd`` (FGD-OPENB.md §4.3). They are **not HAMi behaviour**:
select one with ``node_scheduler_policy`` (``--node-policy fgd``) and the pod is
placed by that policy on the paper's *Open-Gpu-Share* resource model instead
of by HAMi's Filter/Score. Everything here was written from FGD-OPENB.md and
from reading the authors' simulator (``hkust-adsl/kubernetes-scheduler-simulator``
at 8f3d641); no code was taken from it.

Resource model
--------------
* Every usable card holds 1000 milli. A card is usable when it is healthy, not
  cordoned and NVIDIA-typed (HAMi offers no other card); an unusable card has
  0 milli free for ever.
* A pod asks for ``k`` cards with ``milli`` each, ``cpu_milli`` CPU and
  ``memory_mib`` memory, and may restrict the card model.
* A node fits when its free CPU and memory cover the pod (kube-scheduler's
  NodeResourcesFit: a node without ``memory_mib`` does not constrain memory; a
  node without ``cpu_milli`` is given the paper's largest node,
  128,000 milli) and, for a GPU pod, when it has ``k`` distinct cards whose
  type the pod allows and whose free milli is at least ``milli``. For
  whole-card pods this is "k fully free cards", the paper's rule; the paper's
  simulator refuses fractional multi-card pods (openb has none), hamisim gives
  each of the k cards ``milli``. There is no slot limit.
* The type filter is HAMi's ``nvidia.com/use-gputype`` / ``nouse-gputype``
  (case-insensitive substrings of the card type). On openb, where a
  ``gpu_spec`` ``A|B`` becomes ``use-gputype: A,B`` and card types are
  ``NVIDIA-<model>`` with no model a substring of another, this is exactly the
  paper's model match. It is applied per card, so a node whose cards are all of
  other models fails with "GPU model mismatch".

From a HAMi pod (:func:`hamisim.research.model.research_request`): the pod is admitted (HAMi's
webhook, which makes a plain ``nvidia.com/gpu: k`` exclusive with cores 100)
and its per-container requests generated as HAMi does; then

* ``k`` = the sum of ``nums`` over the app containers asking for cards
  (init containers are ignored: they run before the app containers);
* ``milli`` per card = ``min(coresreq, 100) * 10`` when ``coresreq > 0``,
  else ``mempercentagereq * 10`` when that is at most 100, else 1000 (so a
  request given only in MiB of memory takes a whole card); with several GPU
  containers the largest;
* so an openb pod maps back to its own ``gpu_milli``: fractional pods carry
  ``gpucores`` = ``gpumem-percentage`` = ``gpu_milli/10``, whole-card pods
  cores 100.

Policies (integer node scores, the highest wins)
------------------------------------------------
``free CPU`` is the node's CPU capacity minus requests, ``free GPU`` the sum
of its cards' free milli. In scores the pod's CPU is kube-scheduler's
non-zero request (100 milli when the pod asks for none), as the authors'
``GetPodResource`` reads it; the fit uses the real request.

``random`` (random_score.go, GPU selection "random"): one feasible node
uniformly at random (whatever ``node_tie_break`` says); a share pod (1 card,
< 1000 milli) takes a uniformly random fitting card.

``dotprod`` (dot_product_score.go, "merge"/"max"): node vector (free CPU /
128,000, free GPU / 8,000), pod vector (CPU / 128,000, k*milli / 8,000);
score = trunc(100 * (1 - dot/2)) (0 if the free CPU is below the pod's).

``gpuclustering`` (gpu_clustering_score.go): pods have a class -- share, or
"k whole cards"; score = band + trunc(25 * (8000 - free GPU) / 8000), band 75
when the node hosts only pods of the pod's class, 50 when it hosts that class
among others, 25 when it hosts no GPU pod, 0 otherwise. CPU-only pods
score 0 everywhere.

``gpupacking`` (gpu_packing_score.go): if every card of the node is fully
free, max(33 - G, G) for G cards; else take the k fitting cards with the least
free milli (stable order): when some of them is fully free,
max(50 - (fully free ones taken), 33), otherwise
max(100 - (sum of trunc(free*100/1000) over them) / 10, 50). CPU-only pods
score 0 everywhere.

``bestfit`` (best_fit_score.go): trunc(100 * (1 - [0.5 (free CPU - CPU) /
128,000 + 0.5 (free GPU - k*milli) / 8,000])). The authors then min-max
rescale the scores to 0..100 with integer division (plugin_utils.go
NormalizeScore); that map keeps the set of top-scored nodes exactly (only the
raw maximum maps to 100; all 0 when all are equal), so hamisim ranks the raw
integer scores.

``fgd`` (fgd_score.go, frag.go): node fragmentation F_n = sum over the
typical shapes m of weight_m * frag_m(n), in shape order, in double precision,
with frag_m (FGD-OPENB.md §4.1) = all free milli of the node when m is
CPU-only, or when fewer than k_m cards of a type m allows have free >=
milli_m, or when the free CPU is below m's; otherwise the free milli of the
cards that cannot host m. Score = trunc(100 * sigmoid((F_n - F_n') / 1000))
with F_n' after the hypothetical placement. A share pod tries every fitting
card and keeps the first with the highest score -- that card is also where
it is placed; every other pod (CPU-only, whole and multi-card) is placed
hypothetically on the k fitting cards with the least free milli (resource.go
``Sub``; for whole cards the lowest-indexed fully free ones), which is also
where it goes. CPU-only pods change only the free CPU. When the pod's
non-zero CPU exceeds the node's free CPU, the authors' ``Sub`` leaves the node
unchanged (score 50). A pod without any request (no CPU, memory or card)
scores 100 everywhere.

Card choice ("best" in the authors' Open-Gpu-Share Reserve, used by dotprod,
gpuclustering, gpupacking, bestfit): the k fitting cards with the least free
milli, ties to the lower index; for whole cards that is the lowest-indexed
fully free ones (resource.go ``AllocateExclusiveGpuId``).

Ties between top-scored nodes follow the cluster's ``node_tie_break``:

* ``last`` (the default): the last top-scored node in cluster order. This is
  the authors' rule, not upstream kube-scheduler's: their fork of
  kube-scheduler v1.20.5 (``vendor/k8s.io/kubernetes/pkg/scheduler/core/
  generic_scheduler.go``, ``selectHost``) keeps the lexicographically
  smallest node name among the top scores "for reproducibility", and the
  simulator renames every node with a ``%04d-`` prefix from a per-seed random
  permutation (``pkg/simulator/simulator.go`` ``syncClusterResourceList``).
  Ties therefore always go to the same node of a fixed random ranking, which
  packs pods (FGD-OPENB.md §3 says "at random"; the code says otherwise, and
  it matters: uniform ties cost GpuPacking, GpuClustering and FGD 3-6 pp of
  unallocated GPU on openb). hamisim's fill runs permute the node order per
  seed, so "last in cluster order" is the same rule.
* ``random``: uniformly among the top-scored nodes (upstream kube-scheduler).

Randomness: the scheduler owns ``numpy.random.default_rng(seed)``. With
``node_tie_break: random`` a decision draws ``integers(n)`` among its n
top-scored nodes (cluster order) when n > 1; ``random`` always draws its node
that way (every feasible node is tied), and draws ``integers(n)`` among the
fitting cards of a share pod when n > 1. ``tie_draw`` from the engine is
ignored. Both backends consume the generator identically.

kube-scheduler's node sampling is kept: nodes are examined from a rotating
start until ``percentage_of_nodes_to_score`` worth of feasible nodes are
found (the paper uses 100: every node); the research filter (CPU, memory,
cards) is part of that search, as the authors' Open-Gpu-Share filter is a
kube-scheduler filter.

Failures: ``0/N nodes are available: ...`` (:func:`~hamisim.hami.decision.histogram_message`)
over the examined nodes' reasons: ``Insufficient cpu`` and/or ``Insufficient
memory`` (NodeResourcesFit, checked first), else ``GPU model mismatch`` (the
node has cards but none of an allowed type) or ``Insufficient GPU`` (no cards,
or fewer than k fitting cards).

Typical shapes (FGD's target workload) come from
:func:`hamisim.shapes.typical_shapes` and are converted once with the same
milli rule (:func:`hamisim.research.model.shape_arrays`).

Modules
-------
* :mod:`hamisim.research.model`: the Open-Gpu-Share resource model (a HAMi pod
  as ``k`` cards of ``milli`` each, pod classes, typical shapes as arrays);
* :mod:`hamisim.research.policies`: the node-policy interface on this model
  (:class:`~hamisim.research.policies.ModelPolicy`: a score per fitting node,
  the winner's cards) and the six policies above as its subclasses, every
  score and card choice in plain Python; a user's own subclass is named
  ``python:PATH.py:CLASS`` (:mod:`hamisim.research.plugins`);
* :mod:`hamisim.research.reference`: the readable twin of the compiled
  ``ResearchCore``: the model's state and filter, each attempt scored and
  placed through the interface;
* :mod:`hamisim.research.scheduler`: :class:`ResearchScheduler`, the backend
  that runs either core behind the same interface as HAMi's schedulers;
* :mod:`hamisim.research.plugins`: users' own policies in Python, on HAMi's
  model or on this one.

Policy names are listed in :mod:`hamisim.registry`, so that HAMi's policy
parsing can tell a research name from a HAMi one without importing this package.
"""
