"""Experiments built from runs: what users ask hamisim to find out.

* :mod:`~hamisim.studies.runs`: ``RunSpec``, ``run`` and ``compare`` (inputs
  resolved from files, the engine run, the results folder written);
* :mod:`~hamisim.studies.scenario`: scenario files run step by step;
* :mod:`~hamisim.studies.sweepfile`, :mod:`~hamisim.studies.sweep`: sweep
  files and their cells on a process pool or Dask, resumable;
* :mod:`~hamisim.studies.plan`: capacity plans, the fewest nodes that meet a
  target;
* :mod:`~hamisim.studies.fillcurves`: the FGD paper's fill curves.

May use every other part of hamisim except the command line.
"""
