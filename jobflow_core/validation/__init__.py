"""May this object be stored: the checks of a JobFlow, a JobTemplate and a JobFlowTemplate, the warnings
of an update, and the AdmissionReview answer the validating webhook gives (the webhook's door is
``handlers/webhooks.py``; ``kubectl jobflow validate`` gives the same answer offline).

Errors are values (:mod:`jobflow_core.vocabulary.spec_errors`): what is wrong and what to do. May import:
:mod:`jobflow_core.schedules`, :mod:`jobflow_core.dag`, :mod:`jobflow_core.flows`, :mod:`jobflow_core.vocabulary`,
:mod:`jobflow_core.models`.
"""
