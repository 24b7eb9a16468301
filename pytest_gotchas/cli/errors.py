"""The one error type of the command-line tools."""


class CLIError(Exception):
    """A user-facing failure: printed as one message, never a traceback; nothing is written."""
