"""What a Kubernetes 1.33 kube-apiserver's discovery says about each built-in kind it serves by
default, beyond what the official schemas hold.

Why a data table: the OpenAPI definitions (:mod:`everynode.api.schema`, read from
``kubernetes-validate``) carry every kind's group, version, fields, required fields, patch
strategies and descriptions — but not its resource name, scope, short names, categories,
subresources or verbs, which kube-apiserver's REST storages declare in Go
(``pkg/registry/<group>/<resource>/storage``: ``ShortNames()``, ``Categories()``,
``NamespaceScoped()``, the ``/status`` storage).  Those are recorded here as 1.33's
``kubectl get --raw /apis`` (aggregated discovery) lists them, one row per kind, and
:mod:`everynode.api.registry` turns each row into a :class:`~everynode.api.registry.ResourceType`
for every kind not declared there by hand.  Fields are never listed here: the schemas hold them
and every check reads them from there.  ``tests/unit/test_builtin_kinds.py`` cross-checks the
two: every row names a kind of the schemas, and every GA kind of the schemas is either a row
or listed in :data:`NOT_SERVED` with the reason.

What "served by default" means in 1.33: GA group-versions only (beta APIs are off unless
``--runtime-config`` turns them on, KEP-3136), one version per group-version-kind here —
``autoscaling/v1`` HorizontalPodAutoscaler is served upstream beside the preferred ``v2`` but
needs a conversion we do not have, so only ``v2`` is (kubectl uses the preferred version).

Subresources: only the ones everynode serves (``status`` through the generic status strategy).
``scale`` (StatefulSet, ReplicationController) and ``certificatesigningrequests/approval`` are
upstream's but not served yet, so they are not advertised: discovery must never list what
answers 404.

Deprecations: :data:`DEPRECATED` holds the kinds 1.33 marks deprecated in its
prerelease-lifecycle tags (``k8s.io/api/core/v1``); the API server sends upstream's
``WarningMessage`` text for every request to them.
"""

from __future__ import annotations

NAMESPACED, CLUSTER = True, False
STATUS = ("status",)
_ALL = ("all",)
_EXT = ("api-extensions",)
READ_ONLY = ("get", "list")

Row = tuple[str, str, str, bool, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...] | None]
"""(apiVersion, kind, plural, namespaced, short names, categories, subresources, verbs or None for
the standard eight)."""

KINDS: tuple[Row, ...] = (
    # core
    ("v1", "Namespace", "namespaces", CLUSTER, ("ns",), (), STATUS, None),
    ("v1", "Node", "nodes", CLUSTER, ("no",), (), STATUS, None),
    ("v1", "Pod", "pods", NAMESPACED, ("po",), _ALL, STATUS, None),
    ("v1", "Event", "events", NAMESPACED, ("ev",), (), (), None),
    ("v1", "Service", "services", NAMESPACED, ("svc",), _ALL, STATUS, None),
    ("v1", "Endpoints", "endpoints", NAMESPACED, ("ep",), (), (), None),
    ("v1", "ConfigMap", "configmaps", NAMESPACED, ("cm",), (), (), None),
    ("v1", "Secret", "secrets", NAMESPACED, (), (), (), None),
    ("v1", "ServiceAccount", "serviceaccounts", NAMESPACED, ("sa",), (), (), None),
    ("v1", "ComponentStatus", "componentstatuses", CLUSTER, ("cs",), (), (), READ_ONLY),
    ("v1", "LimitRange", "limitranges", NAMESPACED, ("limits",), (), (), None),
    ("v1", "PersistentVolume", "persistentvolumes", CLUSTER, ("pv",), (), STATUS, None),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims", NAMESPACED, ("pvc",), (), STATUS, None),
    ("v1", "PodTemplate", "podtemplates", NAMESPACED, (), (), (), None),
    ("v1", "ReplicationController", "replicationcontrollers", NAMESPACED, ("rc",), _ALL, STATUS, None),
    ("v1", "ResourceQuota", "resourcequotas", NAMESPACED, ("quota",), (), STATUS, None),
    # admissionregistration.k8s.io
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
     CLUSTER, (), _EXT, (), None),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
     CLUSTER, (), _EXT, (), None),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies",
     CLUSTER, (), _EXT, STATUS, None),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
     CLUSTER, (), _EXT, (), None),
    # apiextensions.k8s.io
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", CLUSTER,
     ("crd", "crds"), _EXT, STATUS, None),
    # apiregistration.k8s.io
    ("apiregistration.k8s.io/v1", "APIService", "apiservices", CLUSTER, (), _EXT, STATUS, None),
    # apps
    ("apps/v1", "DaemonSet", "daemonsets", NAMESPACED, ("ds",), _ALL, STATUS, None),
    ("apps/v1", "ControllerRevision", "controllerrevisions", NAMESPACED, (), (), (), None),
    ("apps/v1", "Deployment", "deployments", NAMESPACED, ("deploy",), _ALL, STATUS, None),
    ("apps/v1", "ReplicaSet", "replicasets", NAMESPACED, ("rs",), _ALL, STATUS, None),
    ("apps/v1", "StatefulSet", "statefulsets", NAMESPACED, ("sts",), _ALL, STATUS, None),
    # autoscaling
    ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", NAMESPACED, ("hpa",), _ALL,
     STATUS, None),
    # batch
    ("batch/v1", "CronJob", "cronjobs", NAMESPACED, ("cj",), _ALL, STATUS, None),
    ("batch/v1", "Job", "jobs", NAMESPACED, (), _ALL, STATUS, None),
    # certificates.k8s.io
    ("certificates.k8s.io/v1", "CertificateSigningRequest", "certificatesigningrequests", CLUSTER, ("csr",), (),
     STATUS, None),
    # coordination.k8s.io, discovery.k8s.io, events.k8s.io
    ("coordination.k8s.io/v1", "Lease", "leases", NAMESPACED, (), (), (), None),
    ("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", NAMESPACED, (), (), (), None),
    ("events.k8s.io/v1", "Event", "events", NAMESPACED, ("ev",), (), (), None),
    # flowcontrol.apiserver.k8s.io
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "flowschemas", CLUSTER, (), (), STATUS, None),
    ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", CLUSTER,
     (), (), STATUS, None),
    # networking.k8s.io
    ("networking.k8s.io/v1", "IngressClass", "ingressclasses", CLUSTER, (), (), (), None),
    ("networking.k8s.io/v1", "Ingress", "ingresses", NAMESPACED, ("ing",), (), STATUS, None),
    ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", NAMESPACED, ("netpol",), (), (), None),
    ("networking.k8s.io/v1", "IPAddress", "ipaddresses", CLUSTER, ("ip",), (), (), None),
    ("networking.k8s.io/v1", "ServiceCIDR", "servicecidrs", CLUSTER, (), (), STATUS, None),
    # node.k8s.io
    ("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", CLUSTER, (), (), (), None),
    # policy
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", NAMESPACED, ("pdb",), (), STATUS, None),
    # rbac.authorization.k8s.io
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", CLUSTER, (), (), (), None),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", CLUSTER, (), (), (), None),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", NAMESPACED, (), (), (), None),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", NAMESPACED, (), (), (), None),
    # scheduling.k8s.io
    ("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", CLUSTER, ("pc",), (), (), None),
    # storage.k8s.io
    ("storage.k8s.io/v1", "CSIDriver", "csidrivers", CLUSTER, (), (), (), None),
    ("storage.k8s.io/v1", "CSINode", "csinodes", CLUSTER, (), (), (), None),
    ("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", NAMESPACED, (), (), (), None),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses", CLUSTER, ("sc",), (), (), None),
    ("storage.k8s.io/v1", "VolumeAttachment", "volumeattachments", CLUSTER, (), (), STATUS, None),
)

NOT_SERVED: dict[tuple[str, str], str] = {
    ("v1", "Binding"): "create-only; served as the pods/binding subresource",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "second version of a served kind; needs v1<->v2 conversion",
    ("autoscaling/v1", "Scale"): "a subresource's kind (*/scale)",
    ("policy/v1", "Eviction"): "a subresource's kind (pods/eviction)",
    ("authentication.k8s.io/v1", "TokenRequest"): "a subresource's kind (serviceaccounts/token)",
    ("authentication.k8s.io/v1", "TokenReview"): "create-only review, not stored",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "create-only review, not stored",
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "create-only review, not stored",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "create-only review, not stored",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "create-only review, not stored",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "create-only review, not stored",
}

DEPRECATED: dict[tuple[str, str], str] = {
    # staging/src/k8s.io/apiserver/pkg/endpoints/deprecation: "<gv> <kind> is deprecated in v<maj>.<min>+"
    # plus "; use <gv> <kind>" when the type names its replacement.
    ("v1", "ComponentStatus"): "v1 ComponentStatus is deprecated in v1.19+",
    ("v1", "Endpoints"): "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
}
