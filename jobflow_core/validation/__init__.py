"""jobflow_core.validation.jobflows."""
