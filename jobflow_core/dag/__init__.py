"""jobflow_core.dag."""
