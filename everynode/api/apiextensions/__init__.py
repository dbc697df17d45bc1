"""apiextensions.k8s.io: CustomResourceDefinitions and the schemas of the kinds they define."""
