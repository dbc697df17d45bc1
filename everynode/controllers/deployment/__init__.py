"""The Deployment controller, split by concern as upstream's ``pkg/controller/deployment`` is:

* :mod:`.util` — the pure decisions (``deployment_util.go``, ``calculateStatus``): budgets,
  new/old ReplicaSets, revisions and annotations, proportional scaling, conditions, status;
* :mod:`.controller` — informers, handlers, the queue and ``syncDeployment`` with the
  rolling-update, recreate, scaling/paused, cleanup and progress steps (``deployment_controller.go``,
  ``sync.go``, ``rolling.go``, ``recreate.go``, ``progress.go``) that write what util decides.

The pod-template hash is the DaemonSet's (``controller.ComputeHash``:
:func:`everynode.controllers.daemonset.history.compute_hash`) — upstream has one function for both.
"""
