"""The simulation: kube-scheduler's queue and HAMi's decisions through time.

* :mod:`~hamisim.sim.engine`: the SimPy event loop (arrivals, departures,
  deletions) and kube-scheduler's scheduling queue (priority, backoff, the
  unschedulable pods and their flush), replay and fill modes;
* :mod:`~hamisim.sim.backend`: ``make_scheduler``, the switch between the
  compiled kernel, the reference and the research schedulers;
* :mod:`~hamisim.sim.kernel`, :mod:`~hamisim.sim.arrays`: the glue to the
  compiled kernel ``hamisim._core`` (cluster and pod state as flat arrays);
* :mod:`~hamisim.sim.metrics`: allocation and fragmentation per changed node;
* :mod:`~hamisim.sim.recorder`: the event log and the time series;
* :mod:`~hamisim.sim.checker`: ``--check``, independent books after every event.

Takes model objects, returns tables: reads no files and draws nothing.
"""
