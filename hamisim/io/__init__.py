"""Every file hamisim reads or writes.

Readers turn files into the model (:mod:`hamisim.cluster`, :mod:`hamisim.pods`,
:mod:`hamisim.workload`) and fail with ``file:line: problem``
(:class:`hamisim.errors.InputError`); writers are atomic.

* :mod:`~hamisim.io.documents`, :mod:`~hamisim.io.tables`: YAML/JSON documents
  and CSV tables that keep line numbers;
* :mod:`~hamisim.io.clusterfile`: cluster files (DESIGN §4.1) and
  ``cluster_from_path`` (a cluster file or an openb node list);
* :mod:`~hamisim.io.podspec`: a pod from trace columns or a scenario step;
* :mod:`~hamisim.io.traces`: native trace files (DESIGN §4.2);
* :mod:`~hamisim.io.openb`: Alibaba's openb pod and node lists;
* :mod:`~hamisim.io.scenariofile`: scenario files (DESIGN §4.3);
* :mod:`~hamisim.io.initialstate`: initial-state files (DESIGN §4.4);
* :mod:`~hamisim.io.kubeimport`: ``kubectl get -o json`` dumps -> cluster,
  state and pending pods;
* :mod:`~hamisim.io.bundled`: where the bundled workloads live;
* :mod:`~hamisim.io.synthetic`: generated clusters and traces;
* :mod:`~hamisim.io.outputs`: results folders, swapped in whole.

Runs nothing: never imports the engine (:mod:`hamisim.sim`) or the studies.
"""
