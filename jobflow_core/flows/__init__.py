"""jobflow_core.flows."""
