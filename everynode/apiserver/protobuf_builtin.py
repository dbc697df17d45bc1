"""Protobuf field tables of the built-in kinds ``kubectl create`` sends beside the core ones:
``kubectl create cronjob|ingress|quota|priorityclass`` post protobuf from kubectl 1.32 on.

Why apart from :mod:`everynode.apiserver.protobuf`: same reader, more tables; the numbers are
upstream's ``generated.proto`` (``k8s.io/api/{batch,networking,scheduling,core}/v1``).  Only the
fields the ``kubectl create`` generators can set are listed; a CronJob's Job template is the Job's
table of :mod:`everynode.apiserver.protobuf` (one pod template table for every kind), and the
reader skips unknown field numbers, as protobuf does.
"""

from __future__ import annotations

from everynode.apiserver.protobuf import JOB_SPEC, OBJECT_META, Table

CRON_JOB: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {
        1: ("schedule", "str", None, ""), 2: ("startingDeadlineSeconds", "int", None, "ptr"),
        3: ("concurrencyPolicy", "str", None, ""), 4: ("suspend", "bool", None, "ptr"),
        5: ("jobTemplate", "msg", {1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", JOB_SPEC, "")}, ""),
        6: ("successfulJobsHistoryLimit", "int", None, "ptr"), 7: ("failedJobsHistoryLimit", "int", None, "ptr"),
        8: ("timeZone", "str", None, "ptr"),
    }, ""),
    3: ("status", "msg", {}, ""),
}
INGRESS_BACKEND: Table = {
    3: ("resource", "msg", {1: ("apiGroup", "str", None, "ptr"), 2: ("kind", "str", None, ""),
                            3: ("name", "str", None, "")}, ""),
    4: ("service", "msg", {1: ("name", "str", None, ""),
                           2: ("port", "msg", {1: ("name", "str", None, ""), 2: ("number", "int", None, "")}, "")},
        ""),
}
INGRESS: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {
        1: ("defaultBackend", "msg", INGRESS_BACKEND, ""),
        2: ("tls", "msg", {1: ("hosts", "str", None, "rep"), 2: ("secretName", "str", None, "")}, "rep"),
        3: ("rules", "msg", {
            1: ("host", "str", None, ""),
            2: ("ingressRuleValue", "inline", {1: ("http", "msg", {1: ("paths", "msg", {
                1: ("path", "str", None, ""), 2: ("backend", "msg", INGRESS_BACKEND, ""),
                3: ("pathType", "str", None, "ptr")}, "rep")}, "")}, ""),
        }, "rep"),
        4: ("ingressClassName", "str", None, "ptr"),
    }, ""),
    3: ("status", "msg", {}, ""),
}
RESOURCE_QUOTA: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {1: ("hard", "map_sq", None, ""), 2: ("scopes", "str", None, "rep")}, ""),
    3: ("status", "msg", {1: ("hard", "map_sq", None, ""), 2: ("used", "map_sq", None, "")}, ""),
}
PRIORITY_CLASS: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("value", "int", None, ""), 3: ("globalDefault", "bool", None, ""),
    4: ("description", "str", None, ""), 5: ("preemptionPolicy", "str", None, "ptr"),
}

KINDS: dict[str, Table] = {
    "CronJob": CRON_JOB,
    "Ingress": INGRESS,
    "ResourceQuota": RESOURCE_QUOTA,
    "PriorityClass": PRIORITY_CLASS,
}
