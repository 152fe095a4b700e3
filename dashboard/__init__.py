"""A live web view of every JobFlow: list, DAG (started or not), timeline, JobTemplates, events (docs/dashboard.md).

:mod:`dashboard.store` watches the cluster once per server; :mod:`dashboard.views` (pure) says what each page
shows; :mod:`dashboard.app` serves the pages, their JSON, a live stream per page and the actions;
``python -m dashboard`` runs it (``kubectl jobflow dashboard`` locally, the Deployment of ``manifests/dashboard``
in a cluster).
"""
