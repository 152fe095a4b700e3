"""Runs that start themselves (JobFlowTemplates): cron expressions, a run's name and manifest, whether
a scheduled run fires now, waits, is missed or replaces one (Kubernetes CronJob's rules, one table), and which
CloudEvents trigger a run.

Imported only when a JobFlowTemplate needs it: a handler woken for a JobFlow's event never loads this room
(``tests/unit/test_cold_start_imports.py``). May import: :mod:`jobflow_core.dag`, :mod:`jobflow_core.flows`,
:mod:`jobflow_core.vocabulary`, :mod:`jobflow_core.models`.
"""
