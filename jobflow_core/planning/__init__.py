"""Observation in, plan out: each flow next to its vcjob and record (:mod:`~jobflow_core.planning.observation`),
whether each flow starts (:mod:`~jobflow_core.planning.starts`, the start table), why a JobFlow failed, its
status, the CloudEvents out it records, a JobTemplate's ``jobDependsOnList``, and the planner that puts them
together as a list of actions.

The top room: it may import every other one; none imports it when the program runs. Inside, the planner is above
the start table, the status and the failures, which are above the observation.
"""
