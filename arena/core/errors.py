"""The one error type services raise, and the append-only guard of the event logs.

Every edge translates a ``ServiceError`` its own way: the websocket sends an error frame with
``code``, a form shows ``message``, the admin a message, a command a CommandError, a view an
HTTP status. ``code`` is stable for clients; ``message`` is written for the person who acted.
"""

from __future__ import annotations


class ServiceError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class AppendOnlyError(Exception):
    """A write that would change or delete a row of an append-only log (votes, flags)."""
