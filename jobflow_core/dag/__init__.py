"""Flows between flows: the DAG itself, whether a flow's targets let it start (``dependsOn``, probes), why
a flow is Skipped, each flow's outcome and when a JobFlow that fails fast stops, and which flows a rerun runs again.

May import: :mod:`jobflow_core.flows`, :mod:`jobflow_core.vocabulary`, :mod:`jobflow_core.models`.
"""
