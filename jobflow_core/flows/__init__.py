"""What one flow's spec asks for, and the vcjob it makes: parameters, ``forEach`` items, ``repeat``
iterations, retries, deadlines, its ``when`` condition (CEL), its patch, the results of targets it reads, memoization,
and the vcjob manifest itself; :mod:`~jobflow_core.flows.units` says what a flow is made of (its vcjobs and their
attempts).

Every function here looks at one flow (and the values it is given), never at the DAG around it. May import:
:mod:`jobflow_core.vocabulary`, :mod:`jobflow_core.models`.
"""
