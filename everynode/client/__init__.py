"""Layer 4: one client interface, two transports (in-process, HTTP), informers, work queue."""
