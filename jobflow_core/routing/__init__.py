"""Which JobFlows an incoming event concerns, which changes to an object can matter to the engine at all,
and what an event's snapshot of a JobFlow holds and how it is signed.

The event source and the handler both ask this room: the one to decide what to send, the other what to reconcile.
May import the rooms below :mod:`jobflow_core.queueing` except its sibling :mod:`jobflow_core.insight`.
"""
