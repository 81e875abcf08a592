"""How `rmm`'s commands end: the exit codes scripts rely on, and the error that carries one."""

from __future__ import annotations

OK, REFUSED, USAGE, NO_DATABASE, UNKNOWN_USER, BAD_DATA, NOT_REFLECTED = 0, 1, 2, 3, 4, 5, 6
EXIT_CODES = """exit codes:
  0  done
  1  refused or aborted (forget not confirmed)
  2  usage error (bad or missing arguments)
  3  database missing, unreadable or unreachable, or a bad URL
  4  unknown user (or unknown memory id)
  5  bad import data
  6  some sessions failed to reflect (their turns are kept; retried later)"""


class CommandError(Exception):
    """A failure with the message to print and the exit code to return."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
