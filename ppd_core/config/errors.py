"""Errors raised by ppd_core. Every user-facing error is one line that names the input.

Every error survives ``pickle`` (a process pool sends a worker's exception back to the caller by pickling
it): ``__reduce__`` rebuilds it from the constructor arguments, so the message and the fields come back
intact instead of the unpickler calling ``__init__`` with the formatted message alone.
"""


class PPDError(ValueError):
    """Base class for user-facing errors (bad scenario, bad trace, bad catalog entry)."""

    def __reduce__(self):
        return (type(self), self.args, self.__dict__ or None)


class ScenarioError(PPDError):
    """A scenario key has a bad value. ``key`` names it, the message says what is allowed."""

    def __init__(self, key: str, message: str):
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}")

    def __reduce__(self):
        return (type(self), (self.key, self.message), self.__dict__)


class TraceError(PPDError):
    """An imported trace file is malformed or too large. ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None, source: str = "trace"):
        self.line = line
        self.source = source
        self.message = message
        where = f"{source} line {line}" if line is not None else source
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        return (type(self), (self.message, self.line, self.source), self.__dict__)
