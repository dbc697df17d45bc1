"""ClusterRole aggregation: the rules an aggregated ClusterRole gets from the roles it selects.

Upstream: ``pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go``
(``syncClusterRole``).  For a ClusterRole with an ``aggregationRule``, every selector in
``clusterRoleSelectors`` is taken in order; the ClusterRoles it selects are taken by name, the
role itself skipped; each of their rules is appended unless an equal rule is already there.  The
result *replaces* the role's rules (the controller server-side-applies them with field manager
``clusterrole-aggregation-controller``), and nothing is written when it equals them.

Equality is ``equality.Semantic.DeepEqual`` over the five PolicyRule fields, which treats an
absent list like an empty one; the rules written carry only the non-empty fields, as the
controller's apply configuration does.

The controller re-syncs every aggregating role whenever any ClusterRole changes, so chains
(``admin`` selects ``edit``, which selects ``view``) converge over several passes;
:func:`aggregate_until_stable` runs those passes to the fixed point, for callers that hold every
ClusterRole at once (bootstrap, table tests).  A selector that does not convert is an error
(:class:`~everynode.api.selectors.SelectorError`), on which upstream retries the role later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from everynode.api.selectors import label_selector_from_dict

Obj = Mapping[str, Any]

FIELD_MANAGER = "clusterrole-aggregation-controller"
_RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")

__all__ = ["FIELD_MANAGER", "aggregation_selectors", "aggregated_rules", "rules_equal",
           "aggregate_until_stable"]


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _labels(obj: Obj) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _rule_key(rule: Any) -> tuple[tuple[str, ...], ...]:
    r = rule if isinstance(rule, Mapping) else {}
    return tuple(tuple(r.get(f) or ()) for f in _RULE_FIELDS)


def _clean_rule(rule: Any) -> dict[str, Any]:
    r = rule if isinstance(rule, Mapping) else {}
    return {f: list(r[f]) for f in _RULE_FIELDS if r.get(f)}


def aggregation_selectors(cluster_role: Obj) -> list[Obj] | None:
    """``aggregationRule.clusterRoleSelectors``, or None when the role does not aggregate."""
    rule = cluster_role.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return None
    selectors = rule.get("clusterRoleSelectors")
    return [s for s in selectors if isinstance(s, Mapping)] if isinstance(selectors, list) else []


def aggregated_rules(cluster_role: Obj, cluster_roles: Iterable[Obj]) -> list[dict[str, Any]] | None:
    """The rules ``syncClusterRole`` gives ``cluster_role`` from ``cluster_roles`` (all of them,
    as the controller's lister holds them); None when the role has no ``aggregationRule``.

    Raises :class:`~everynode.api.selectors.SelectorError` for a selector that does not convert.
    """
    selectors = aggregation_selectors(cluster_role)
    if selectors is None:
        return None
    own_name = _name(cluster_role)
    candidates = sorted(cluster_roles, key=_name)
    rules: list[dict[str, Any]] = []
    seen: set[tuple[tuple[str, ...], ...]] = set()
    for raw in selectors:
        selector = label_selector_from_dict(raw)
        for other in candidates:
            if _name(other) == own_name or not selector.matches(_labels(other)):
                continue
            for rule in other.get("rules") or ():
                key = _rule_key(rule)
                if key not in seen:
                    seen.add(key)
                    rules.append(_clean_rule(rule))
    return rules


def rules_equal(a: Sequence[Any] | None, b: Sequence[Any] | None) -> bool:
    """Semantic equality of two rule lists (absent and empty lists alike, order significant)."""
    return [_rule_key(r) for r in a or ()] == [_rule_key(r) for r in b or ()]


def aggregate_until_stable(cluster_roles: Iterable[Obj], *, max_passes: int = 100) -> list[dict[str, Any]]:
    """Every ClusterRole with its aggregated rules, after as many controller passes (each
    aggregating role synced in name order) as it takes for nothing to change.  Returns new
    dicts for the roles that changed, the given objects for the rest, in the given order."""
    roles: list[dict[str, Any]] = [r if isinstance(r, dict) else dict(r) for r in cluster_roles]
    for _ in range(max_passes):
        changed = False
        for i in sorted(range(len(roles)), key=lambda j: _name(roles[j])):
            new_rules = aggregated_rules(roles[i], roles)
            if new_rules is None or rules_equal(new_rules, roles[i].get("rules")):
                continue
            roles[i] = {**roles[i], "rules": new_rules}
            changed = True
        if not changed:
            break
    return roles
