"""jobflow_core.routing.concerns."""
