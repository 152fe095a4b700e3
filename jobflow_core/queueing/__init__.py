"""JobFlows sharing a Volcano queue: the line (started JobFlows and older ones first; what can never run
is never started) and ``status.queue``, the status a JobFlow's place in line shows.

The start table (:mod:`jobflow_core.planning.starts`) asks the line; the planner writes the status. Those two take
the planner's observation and decisions as arguments, named in annotations only (see docs/architecture.md, "The
rooms and their order"). May import the rooms below :mod:`jobflow_core.planning` except its siblings
:mod:`jobflow_core.insight` and :mod:`jobflow_core.routing`.
"""
