"""HAMi v2.10.0's scheduling semantics, in plain Python.

* :mod:`hamisim.hami.policy`: policy strings and annotations -> the codes both
  backends use (chain mode, mutex and topology-aware filters, numa-bind,
  scoring weights) and the warnings for strings HAMi reads differently;
* :mod:`hamisim.hami.reference`: the reference scheduler, the readable
  specification of HAMi's Filter and Score (card score, card sort, Fit, node
  score and choice) beside ``docs/HAMI-SEMANTICS.md``;
* :mod:`hamisim.hami.gosort`: Go's ``sort.Sort`` (insertion sort and pdqsort),
  so card ties fall as they do in HAMi;
* :mod:`hamisim.hami.decision`: what an attempt produces, in HAMi's and
  kube-scheduler's words (reason strings, ``FailedScheduling``, the
  ``hami.io/vgpu-devices-allocated`` annotation).
* :mod:`hamisim.hami.quirks`: HAMi's quirks that moved a run, in numbers (the
  misread policies and cores above 100 of its pods, the init-container
  accounting the engines measure) and the words the outputs say them in;

Knows the model and kube-scheduler's filters (:mod:`hamisim.kube`); nothing of
time, files, the engine or the research policies.
"""
