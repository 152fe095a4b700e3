"""jobflow_core.planning."""
