"""RBAC's escalation check: nobody grants, through a Role or a binding, permissions they do not
hold themselves — unless they may ``escalate`` (roles) or ``bind`` (bindings).

Upstream: ``staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go``
(``Covers``, ``BreakdownRule``), ``pkg/registry/rbac/validation/policy_compact.go``
(``CompactRules``), ``pkg/registry/rbac/validation/rule.go`` (``ConfirmNoEscalation``),
``pkg/registry/rbac/escalation_check.go`` (``EscalationAllowed``, ``RoleEscalationAuthorized``,
``BindingAuthorized``) and the policy-based storages of ``pkg/registry/rbac/{role,clusterrole,
rolebinding,clusterrolebinding}/policybased``.  This is what makes an operator's
ServiceAccount, allowed to create Roles, unable to create one broader than its own rights.

The check runs on create and update of the four kinds, after validation: members of
``system:masters`` pass; a Role / ClusterRole passes when the user may ``escalate`` it (verb
``escalate`` on ``roles`` / ``clusterroles`` by name) or holds every rule (its rules in the
request's namespace — cluster-wide for ClusterRoles — must *cover* the new rules, rule by atomic
rule); a ClusterRole with an ``aggregationRule`` needs full authority besides.  A binding passes
when the user may ``bind`` the role it refers to (in the binding's namespace) or holds every rule
of that role.  An update that only changes ``ownerReferences`` / ``finalizers`` (what the garbage
collector writes) is not checked.  The refusal is a 403 naming the object and listing the missing
rules in upstream's compact form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from everynode.api import errors
from everynode.api.errors import ApiError
from everynode.api.rbac import (
    GROUP_NAME,
    SYSTEM_PRIVILEGED_GROUP,
    Attributes,
    Authorization,
    RuleSource,
    UserInfo,
    role_reference_rules,
    rules_for,
)

Obj = Mapping[str, Any]
Authorizer = Callable[[Attributes], Authorization]

FULL_AUTHORITY: tuple[Obj, ...] = ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                                   {"verbs": ["*"], "nonResourceURLs": ["*"]})
AGGREGATION_MESSAGE = "must have cluster-admin privileges to use the aggregationRule"

__all__ = ["breakdown_rule", "covers", "compact_rules", "compact_string", "confirm_no_escalation",
           "escalation_allowed", "role_write_forbidden", "binding_write_forbidden"]


def _list(rule: Obj, key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def breakdown_rule(rule: Obj) -> list[dict[str, list[str]]]:
    """``BreakdownRule``: one rule per (group, resource, verb[, name]) and per (URL, verb)."""
    out: list[dict[str, list[str]]] = []
    verbs, names = _list(rule, "verbs"), _list(rule, "resourceNames")
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in verbs:
                if names:
                    out.extend({"apiGroups": [group], "resources": [resource], "verbs": [verb],
                                "resourceNames": [name]} for name in names)
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in _list(rule, "nonResourceURLs"):
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return out


def _resources_cover(owner: list[str], wanted: list[str]) -> bool:
    if "*" in owner or set(wanted) <= set(owner):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def _rule_covers(owner: Obj, sub: Obj) -> bool:
    """``ruleCovers``: does one owner rule cover one atomic rule?"""
    owner_verbs, owner_groups = _list(owner, "verbs"), _list(owner, "apiGroups")
    owner_names = _list(owner, "resourceNames")
    sub_names = _list(sub, "resourceNames")
    return (("*" in owner_verbs or set(_list(sub, "verbs")) <= set(owner_verbs))
            and ("*" in owner_groups or set(_list(sub, "apiGroups")) <= set(owner_groups))
            and _resources_cover(_list(owner, "resources"), _list(sub, "resources"))
            and all(any(_url_covers(o, p) for o in _list(owner, "nonResourceURLs"))
                    for p in _list(sub, "nonResourceURLs"))
            and (not owner_names if not sub_names else (not owner_names or set(sub_names) <= set(owner_names))))


def covers(owner_rules: Sequence[Obj], servant_rules: Sequence[Obj]) -> tuple[bool, list[dict[str, list[str]]]]:
    """``Covers``: whether the owner's rules allow everything the servant rules allow, and the
    atomic rules they do not."""
    missing = [sub for rule in servant_rules for sub in breakdown_rule(rule)
               if not any(_rule_covers(owner, sub) for owner in owner_rules)]
    return not missing, missing


def compact_rules(rules: Sequence[Obj]) -> list[dict[str, list[str]]]:
    """``CompactRules``: rules of one group and one resource that differ only in verbs become
    one (verbs in the order met); the others are kept as they are."""
    compacted: list[dict[str, list[str]]] = []
    simple: dict[tuple[str, str], dict[str, list[str]]] = {}
    for rule in rules:
        groups, resources = _list(rule, "apiGroups"), _list(rule, "resources")
        is_simple = (len(groups) == 1 and len(resources) == 1 and set(rule) <= {"apiGroups", "resources", "verbs"})
        if is_simple:
            key = (groups[0], resources[0])
            if key in simple:
                simple[key]["verbs"].extend(_list(rule, "verbs"))
            else:
                simple[key] = {"apiGroups": list(groups), "resources": list(resources), "verbs": _list(rule, "verbs")}
        else:
            compacted.append({k: _list(rule, k) for k in rule})
    return compacted + list(simple.values())


def _go_strings(values: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(orjson.dumps(v).decode() for v in values) + "]"


def compact_string(rule: Obj) -> str:
    """``CompactString``: ``{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}``."""
    parts = [f"{label}:{_go_strings(_list(rule, key))}"
             for label, key in (("APIGroups", "apiGroups"), ("Resources", "resources"),
                                ("NonResourceURLs", "nonResourceURLs"), ("ResourceNames", "resourceNames"),
                                ("Verbs", "verbs"))
             if _list(rule, key)]
    return "{" + ", ".join(parts) + "}"


def confirm_no_escalation(user: UserInfo, namespace: str, rules: Sequence[Obj], source: RuleSource) -> str:
    """``ConfirmNoEscalation``: "" when the user's rules in ``namespace`` cover ``rules``, else
    the refusal text (the missing rules compacted, described, sorted and de-duplicated)."""
    held = rules_for(source, user, namespace)
    ok, missing = covers(held.rules, rules)
    if ok:
        return ""
    described = sorted({compact_string(r) for r in compact_rules(missing)})
    message = (f"user {orjson.dumps(user.name).decode()} (groups={_go_strings(user.groups)}) is attempting to "
               "grant RBAC permissions not currently held:\n" + "\n".join(described))
    if held.errors:
        message += "; resolution errors: [" + " ".join(held.errors) + "]"
    return message


def escalation_allowed(user: UserInfo) -> bool:
    """``EscalationAllowed``: ``system:masters`` may grant anything."""
    return SYSTEM_PRIVILEGED_GROUP in user.groups


def _only_gc_fields_changed(new: Obj, old: Obj | None) -> bool:
    """``IsOnlyMutatingGCFields``: equal once the old object takes the new ownerReferences and
    finalizers."""
    if old is None:
        return False
    new_meta = dict(new.get("metadata") or {})
    old_meta = dict(old.get("metadata") or {})
    for key in ("ownerReferences", "finalizers"):
        old_meta.pop(key, None)
        if key in new_meta:
            old_meta[key] = new_meta[key]
    return {**old, "metadata": old_meta} == {**new, "metadata": new_meta}


def _rules(obj: Obj) -> list[Obj]:
    rules = obj.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def role_write_forbidden(user: UserInfo, obj: Obj, *, namespace: str, source: RuleSource,
                         authorizer: Authorizer, old: Obj | None = None) -> ApiError | None:
    """The policy-based Role / ClusterRole storage: the 403 for writing ``obj`` (``old`` on an
    update), or None when the write may go ahead.  ``namespace`` is the request's ("" for a
    ClusterRole)."""
    cluster = obj.get("kind") == "ClusterRole" or not namespace
    plural = "clusterroles" if cluster else "roles"
    name = _name(obj)
    if escalation_allowed(user):
        return None
    escalate = Attributes.for_resource(user, "escalate", plural, api_group=GROUP_NAME, name=name,
                                       namespace=namespace)
    if authorizer(escalate).allowed or _only_gc_fields_changed(obj, old):
        return None
    refusal = confirm_no_escalation(user, namespace, _rules(obj), source)
    if refusal:
        return errors.forbidden(plural, GROUP_NAME, name, refusal)
    if cluster and (obj.get("aggregationRule") is not None or (old is not None and old.get("aggregationRule"))):
        if confirm_no_escalation(user, namespace, FULL_AUTHORITY, source):
            return errors.forbidden(plural, GROUP_NAME, name, AGGREGATION_MESSAGE)
    return None


def binding_write_forbidden(user: UserInfo, obj: Obj, *, namespace: str, source: RuleSource,
                            authorizer: Authorizer, old: Obj | None = None) -> ApiError | None:
    """The policy-based RoleBinding / ClusterRoleBinding storage: the 403 for writing ``obj``,
    or None.  ``namespace`` is the request's ("" for a ClusterRoleBinding)."""
    plural = "rolebindings" if namespace else "clusterrolebindings"
    name = _name(obj)
    if escalation_allowed(user) or _only_gc_fields_changed(obj, old):
        return None
    raw_ref = obj.get("roleRef")
    ref: Mapping[str, Any] = raw_ref if isinstance(raw_ref, Mapping) else {}
    ref_kind = ref.get("kind")
    if ref_kind in ("Role", "ClusterRole"):
        bind = Attributes.for_resource(user, "bind", "roles" if ref_kind == "Role" else "clusterroles",
                                       api_group=str(ref.get("apiGroup") or ""), name=str(ref.get("name") or ""),
                                       namespace=namespace)
        if authorizer(bind).allowed:
            return None
    rules, error = role_reference_rules(source, ref, namespace)
    if error:
        return errors.forbidden(plural, GROUP_NAME, name, error)
    refusal = confirm_no_escalation(user, namespace, [r.source for r in rules], source)
    return errors.forbidden(plural, GROUP_NAME, name, refusal) if refusal else None
