"""The value every spec check returns: what is wrong and what to do (:mod:`jobflow_core.validation.jobflows`)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecError:
    """One problem with a JobFlow (or JobTemplate) spec: ``message`` says what is wrong, ``hint`` what to do.

    ``message`` keeps upstream's exact wording where upstream has one, so that tools matching on it still work.
    """

    code: str
    message: str
    hint: str

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})"
