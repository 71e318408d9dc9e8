"""Errors raised by ppd_core. Every user-facing error is one line that names the input."""


class PPDError(ValueError):
    """Base class for user-facing errors (bad scenario, bad trace, bad catalog entry)."""


class ScenarioError(PPDError):
    """A scenario key has a bad value. ``key`` names it, the message says what is allowed."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{key}: {message}")


class TraceError(PPDError):
    """An imported trace file is malformed or too large. ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None, source: str = "trace"):
        self.line = line
        self.source = source
        where = f"{source} line {line}" if line is not None else source
        super().__init__(f"{where}: {message}")
