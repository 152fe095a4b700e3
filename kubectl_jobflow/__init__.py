"""``kubectl jobflow``: the command line for JobFlows and JobTemplates, installed as the kubectl plugin
``kubectl-jobflow``.

It does what upstream's ``vcctl jobflow`` / ``vcctl jobtemplate`` do, with the same flags and table layout
(reference D), and what they lack: a non-zero exit when anything failed, real YAML multi-document parsing, a view
of a flow's jobs (``status``), its DAG (``graph``), the admission checks offline (``validate``), a dry run of the
planner (``plan``), and the JobTemplate <-> vcjob conversion upstream documented but never wrote (``convert``).

Where things are:

* :mod:`~kubectl_jobflow.cli`: the argument parser, the common flags, running a command, exit codes
  (:class:`~kubectl_jobflow.errors.CommandError` is a user's mistake: printed, exit 1);
* :mod:`~kubectl_jobflow.documents`: YAML/JSON files in, documents out;
* :mod:`~kubectl_jobflow.output`: vcctl's tables, JSON and YAML;
* :mod:`~kubectl_jobflow.conversion`: JobTemplate <-> vcjob, the same spec under two kinds;
* one module per command group: :mod:`~kubectl_jobflow.resources` (create, delete, list, get, describe, for both
  kinds), :mod:`~kubectl_jobflow.convert`, :mod:`~kubectl_jobflow.status`, :mod:`~kubectl_jobflow.graph`,
  :mod:`~kubectl_jobflow.timeline`, :mod:`~kubectl_jobflow.validate`, :mod:`~kubectl_jobflow.plan`,
  :mod:`~kubectl_jobflow.control`, :mod:`~kubectl_jobflow.runs`, :mod:`~kubectl_jobflow.logs`.

Below it, shared with the dashboard: the cluster, as a person's command connects to it
(:mod:`apiclient.cluster`: the Kubernetes client is imported on first use, so offline commands start fast), the
writes that steer a JobFlow (:mod:`apiclient.steering`), and what is shown of a JobFlow (:mod:`display`: its facts
flow by flow, its DAG drawn, its timeline).

Every decision about a JobFlow (is it valid, what starts, what a vcjob looks like, its DAG order, the
JobTemplate <-> vcjob conversion aside) is the pure core's (:mod:`jobflow_core`); this package reads files and
the cluster, calls the core, and prints.
"""
