"""What the engine can tell about a JobFlow beyond what it must do: when each waiting flow is expected to
start and the JobFlow to end (and its critical path), what each run cost, each JobTemplate's statistics, and which
containers' logs show a JobFlow's flows.

Nothing here changes what runs. May import the rooms below :mod:`jobflow_core.queueing` except its sibling
:mod:`jobflow_core.routing`.
"""
