"""Layer 7: the kubelet simulation.  ``KubeletSimulator(client, clock=...)`` plays every node's kubelet."""

from everynode.kubelet.simulator import KubeletSimulator

__all__ = ["KubeletSimulator"]
