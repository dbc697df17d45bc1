"""The root-CA publisher: a ``kube-root-ca.crt`` ConfigMap in every namespace whose ``ca.crt``
is the cluster CA (the certificate clients trust the API server with), put back as it should
be when edited and recreated when deleted — upstream's
``pkg/controller/certificates/rootcacertpublisher/publisher.go``.

The pods' ``kube-api-access-*`` volume projects this ConfigMap's ``ca.crt`` next to the token,
so a client in a pod verifies ``https://kubernetes.default.svc``.  A repair writes ``data``
back to exactly ``{ca.crt}`` and adds the description annotation when it is missing, keeping
everything else, as upstream does.  The loop is
:class:`~everynode.controllers.pernamespace.PerNamespaceObjectController`'s.
"""

from __future__ import annotations

from typing import Any

from everynode.api.meta import deep_copy
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.clock import Clock
from everynode.controllers.pernamespace import PerNamespaceObjectController

Obj = dict[str, Any]

ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
CA_KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class RootCACertPublisher(PerNamespaceObjectController):
    resource = "configmaps"
    name = ROOT_CA_CONFIG_MAP
    queue_name = "root_ca_cert_publisher"

    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock, root_ca: str) -> None:
        self.root_ca = root_ca
        super().__init__(client, informers=informers, clock=clock)

    def desired(self, namespace: str) -> Obj:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
                             "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                "data": {CA_KEY: self.root_ca}}

    def repaired(self, existing: Obj) -> Obj | None:
        annotations = existing["metadata"].get("annotations") or {}
        if existing.get("data") == {CA_KEY: self.root_ca} and annotations.get(DESCRIPTION_ANNOTATION):
            return None
        new = deep_copy(existing)
        new["data"] = {CA_KEY: self.root_ca}
        if DESCRIPTION_ANNOTATION not in annotations:
            new["metadata"]["annotations"] = dict(annotations, **{DESCRIPTION_ANNOTATION: DESCRIPTION})
        return new
