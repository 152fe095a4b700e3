"""Which CloudEvents start a run of a JobFlowTemplate, and with which parameters.

A template's ``spec.triggers[]`` each name a CloudEvent ``type`` (exactly) and, optionally, a ``source`` (exactly).
An event of that type (and source) is put to the trigger's ``condition``, a CEL expression, and when it holds (or
there is none) it starts one run whose ``parameters`` are the values of the trigger's CEL expressions (by name):

=====================  ============================================================================
``data``               the event's data: JSON as sent (an object, a list, a string, ...)
``type``, ``source``   the event's attributes, strings (``subject`` and ``time`` are ``""`` when
``id``, ``subject``,   unset)
``time``
=====================  ============================================================================

``condition: data.size > 0`` and ``parameters: {date: data.date}`` read as written. A value that is not a string
becomes compact JSON (``2``, ``true``, ``{"a":1}``). The run is named after the trigger, the event's ``source`` and
``id`` (:func:`jobflow_core.schedules.runs.event_run_name`): the same event delivered twice starts one run. A trigger
with ``enabled: false`` starts nothing; a condition or parameter that cannot be evaluated over this event starts
nothing, and says why (the shell reports it on the template as a Warning).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobflow_core.flows.conditions import evaluate, value_text
from jobflow_core.models import JobFlowTemplate, Trigger
from jobflow_core.schedules.runs import Cause, Start, event_run_name


@dataclass(frozen=True)
class Incoming:
    """The parts of a CloudEvent a trigger reads."""

    id: str
    source: str
    type: str
    subject: str = ""
    time: str = ""
    data: Any = None

    def variables(self) -> dict[str, Any]:
        return {"data": self.data, "type": self.type, "source": self.source, "id": self.id, "subject": self.subject,
                "time": self.time}


@dataclass(frozen=True)
class Match:
    """A trigger the event matched by type and source: the run it starts, or why it starts none."""

    trigger: str
    start: Start | None = None
    skipped: str | None = None
    """Why no run: the condition is false (not a problem) ..."""
    error: str | None = None
    """... or could not be evaluated (a problem: the template or the event needs fixing)."""


def listens(trigger: Trigger, event: Incoming) -> bool:
    return trigger.enabled is not False and trigger.type == event.type and trigger.source in (None, event.source)


def matches(template: JobFlowTemplate, event: Incoming) -> list[Match]:
    """What each of ``template``'s triggers that listen to ``event`` makes of it."""
    found = []
    for trigger in template.spec.triggers or ():
        if listens(trigger, event):
            found.append(_match(template, trigger, event))
    return found


def _match(template: JobFlowTemplate, trigger: Trigger, event: Incoming) -> Match:
    variables = event.variables()
    if trigger.condition:
        verdict = evaluate(trigger.condition, variables=variables)
        if verdict.error:
            return Match(trigger.name, error=f"trigger {trigger.name!r}: condition {trigger.condition!r}: "
                                             f"{verdict.error}")
        if not verdict.holds:
            return Match(trigger.name, skipped=f"trigger {trigger.name!r}: condition is false for event {event.id}")
    parameters: dict[str, str] = {}
    for name, expression in (trigger.parameters or {}).items():
        value, error = value_text(expression, variables=variables)
        if error or value is None:
            return Match(trigger.name, error=f"trigger {trigger.name!r}: parameter {name} = {expression!r}: {error}")
        parameters[name] = value
    name = event_run_name(template.name, trigger=trigger.name, source=event.source, event_id=event.id)
    return Match(trigger.name, start=Start(name=name, cause=Cause.EVENT, trigger=trigger.name, event_id=event.id,
                                           event_source=event.source, parameters=parameters))


def incoming(attributes: Mapping[str, Any], data: Any) -> Incoming:
    """An :class:`Incoming` from a CloudEvent's attributes (``id``, ``source``, ``type``, ``subject``, ``time``)."""
    return Incoming(id=str(attributes.get("id") or ""), source=str(attributes.get("source") or ""),
                    type=str(attributes.get("type") or ""), subject=str(attributes.get("subject") or ""),
                    time=str(attributes.get("time") or ""), data=data)
