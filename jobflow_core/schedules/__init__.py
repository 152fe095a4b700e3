"""jobflow_core.schedules.firing."""
