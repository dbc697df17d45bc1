"""The DaemonSet controller, split by concern as upstream splits ``pkg/controller/daemon``:

* :mod:`.eligibility` — which nodes a DaemonSet wants, default tolerations, node pin, budgets
  (upstream ``util/daemonset_util.go`` + ``NodeShouldRunDaemonPod``);
* :mod:`.manage` — per-node create/delete decisions (``podsShouldBeOnNode``);
* :mod:`.update` — the RollingUpdate planner (``update.go``);
* :mod:`.history` — ControllerRevisions: hash, data bytes, construct/cleanup (``update.go``);
* :mod:`.status` — the status counters and write rule, plus everynode's rollout conditions;
* :mod:`.backoff` — failed-pod backoff (``flowcontrol.Backoff``);
* :mod:`.adoption` — ControllerRef claiming (``controller_ref_manager.go``);
* :mod:`.controller` — informers, queue, handlers, the incremental sync loop.
"""

from everynode.controllers.daemonset.controller import DaemonSetController

__all__ = ["DaemonSetController"]
