"""The words every room uses: the API's names and keys, how vcjobs are named and owned, durations, gang
requests, Kubernetes Events and their reasons, the phases, spec errors and Kubernetes' naming rules.

Each module here answers a question of fact that many decisions share ("is this vcjob ours?", "is this phase
final?", "how is this quantity counted?"), so that no room keeps its own copy. May import: :mod:`jobflow_core.models`
only.
"""
