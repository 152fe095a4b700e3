"""JobFlows sharing a Volcano queue: the line (started JobFlows and older ones first; what can never run
is never started), ``status.queue``, the status a JobFlow's place in line shows, and deadlines that steer the line.

The start table (:mod:`jobflow_core.planning.starts`) asks the line; the planner writes the status. Those two take
the planner's observation and decisions as arguments, named in annotations only (see docs/architecture.md, "The
rooms and their order"). May import the rooms below :mod:`jobflow_core.planning` but :mod:`jobflow_core.routing`
(a deadline reads the forecasts of :mod:`jobflow_core.insight`).
"""
