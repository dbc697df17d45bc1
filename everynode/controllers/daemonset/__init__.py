"""The DaemonSet controller, split by concern as upstream splits ``pkg/controller/daemon``:

* :mod:`.placement` — which nodes a DaemonSet wants: default tolerations, the node test compiled
  per spec (upstream ``AddOrUpdateDaemonPodTolerations`` + ``NodeShouldRunDaemonPod``);
* :mod:`.daemonpods` — the pods it makes and how they are read: template, node pin, target
  node, "is updated", oldest first (upstream ``util/daemonset_util.go``);
* :mod:`.budgets` — maxSurge / maxUnavailable of a rolling update (``SurgeCount``,
  ``UnavailableCount``);
* :mod:`.manage` — per-node create/delete decisions (``podsShouldBeOnNode``);
* :mod:`.update` — the RollingUpdate planner (``update.go``);
* :mod:`.history` — ControllerRevisions: hash, data bytes, construct/cleanup (``update.go``);
* :mod:`.status` — the status counters and write rule, plus everynode's rollout conditions;
* :mod:`.backoff` — failed-pod backoff (``flowcontrol.Backoff``);
* :mod:`.adoption` — ControllerRef claiming (``controller_ref_manager.go``);
* :mod:`.controller` — handlers and the incremental sync loop, on the controller kit
  (:mod:`everynode.client.kit`).
"""

from everynode.controllers.daemonset.controller import DaemonSetController

__all__ = ["DaemonSetController"]
