"""jobflow_core.insight."""
