"""The one exception commands raise for a user's mistake or a failure they explain; the command line prints it and
exits with its ``code`` (:mod:`kubectl_jobflow.exits`)."""

from kubectl_jobflow.exits import FAILED


class CommandError(RuntimeError):
    """The command cannot go on; the message says why and what to do, ``code`` is the exit code."""

    def __init__(self, message: str, *, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code
