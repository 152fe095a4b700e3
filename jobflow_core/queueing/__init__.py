"""jobflow_core.queueing.line."""
