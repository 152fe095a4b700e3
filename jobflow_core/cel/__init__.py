"""CEL as Kubernetes users write it: the functions of Kubernetes' CEL libraries, a cost limit on every
evaluation, and the list of functions an expression calls, so that what admission accepts also runs.

CEL is evaluated by ``cel-python`` (``celpy``); this room adds what Kubernetes' CEL environment has and celpy
lacks: the strings, lists, regex and quantity libraries (:mod:`~jobflow_core.cel.library`), a budget of
evaluation steps (:mod:`~jobflow_core.cel.budget`: one user's expression cannot stall the shared handler), and a
check of every function an expression calls before it is stored (:mod:`~jobflow_core.cel.calls`). The callers
(``when``, ``repeat.until``, ``forEach``, ``memoize.key``, triggers) reach all three through
:mod:`jobflow_core.flows.conditions`.

Everything here imports ``celpy``, which costs a cold start some 100 ms: import this room only when an expression
is about to be compiled. May import: :mod:`jobflow_core.vocabulary`.
"""
