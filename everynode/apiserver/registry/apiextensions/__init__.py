"""apiextensions.k8s.io storages: CustomResourceDefinitions and the custom resources they define."""
