"""``kubectl jobflow``: the command line for JobFlows and JobTemplates, installed as the kubectl plugin
``kubectl-jobflow``.

It does what upstream's ``vcctl jobflow`` / ``vcctl jobtemplate`` do, with the same flags and table layout
(reference D), and what they lack: a non-zero exit when anything failed, real YAML multi-document parsing, a view
of a flow's jobs (``status``), its DAG (``graph``), the admission checks offline (``validate``), a dry run of the
planner (``plan``), and the JobTemplate <-> vcjob conversion upstream documented but never wrote (``convert``).

Where things are:

* :mod:`~kubectl_jobflow.cli`: the argument parser, the common flags, running a command, exit codes
  (:class:`~kubectl_jobflow.errors.CommandError` is a user's mistake: printed, exit 1);
* :mod:`~apiclient.cluster`: the only module that talks to the API server (the Kubernetes client is imported
  on first use, so offline commands start fast);
* :mod:`~kubectl_jobflow.documents`: YAML/JSON files in, documents out;
* :mod:`~kubectl_jobflow.output`: vcctl's tables, ages, JSON and YAML;
* :mod:`~display.facts`: a JobFlow and its vcjobs as rows, flow by flow (for ``status`` and ``graph``);
* one module per command group: :mod:`~kubectl_jobflow.resources` (create, delete, list, get, describe, for both
  kinds), :mod:`~kubectl_jobflow.convert`, :mod:`~kubectl_jobflow.status`, :mod:`~kubectl_jobflow.graph` (with
  :mod:`~display.svg`), :mod:`~kubectl_jobflow.validate`, :mod:`~kubectl_jobflow.plan`.

Every decision about a JobFlow (is it valid, what starts, what a vcjob looks like, its DAG order, the
JobTemplate <-> vcjob conversion) is the pure core's (:mod:`jobflow_core`); this package reads files and the
cluster, calls the core, and prints.
"""
