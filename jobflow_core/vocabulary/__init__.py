"""jobflow_core.vocabulary."""
