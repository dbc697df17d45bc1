"""Layer 6: the scheduler.  ``Scheduler(client, clock=...)`` binds pending pods to nodes."""

from everynode.scheduler.scheduler import DEFAULT_SCHEDULER_NAME, Scheduler

__all__ = ["DEFAULT_SCHEDULER_NAME", "Scheduler"]
