"""The one exception commands raise for a user's mistake; the command line prints it and exits 1."""


class CommandError(RuntimeError):
    """The command cannot go on; the message says why and what to do."""
