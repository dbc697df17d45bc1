"""The API server split by resource, as kube-apiserver's ``pkg/registry`` is.

Where things live:

* ``generic.py`` — :class:`~everynode.apiserver.registry.generic.ResourceStore`, the REST storage
  of one resource (upstream's ``genericregistry.Store``): get, list, create, update, every patch
  type and apply, delete (graceful deletion, finalizers, GC), delete-collection, watch.
* ``strategy.py`` — the protocol a kind's rules plug in by (:class:`Strategy`,
  :class:`SubresourceStrategy`) and the generic metadata rules (``BeforeCreate``/``BeforeUpdate``).
* ``options.py`` (request options and their checks, selectors), ``decode.py`` (what the
  decoder does with a body), ``deletion.py`` (preconditions, GC finalizers), ``watch.py`` (watch
  streaming), ``context.py`` (what all storages share).
* ``table.py`` — which storage serves which resource; run-time registration (CRDs).
* ``<group>/<resource>`` — a kind's rules, only where it has some: ``core/pod/`` (strategy,
  binding, eviction), ``core/namespace.py``, ``core/service.py``, ``apps/daemonset.py``.

:class:`everynode.apiserver.service.ApiService` is the facade the HTTP layer and the in-process
client call: it seeds the built-in objects and dispatches each call to the resource's storage.
"""
