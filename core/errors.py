"""Typed errors: every failure a caller can act on has its own class."""

from __future__ import annotations


class RMMError(Exception):
    """Base class of every error raised by rmm_core."""


class InvalidInputError(RMMError, ValueError):
    """An argument has the wrong type or value; nothing was written."""


class NotFoundError(RMMError, LookupError):
    """No such memory for this user (never created, deleted, or another user's)."""


class DuplicateTurnError(InvalidInputError):
    """A turn id is already stored for this user; nothing was written."""


class StorageError(RMMError):
    """The store could not be opened, read or written (corrupt file, unreachable server)."""


class EmbedderMismatchError(InvalidInputError):
    """The store holds vectors of another embedding model (another dimension, or the same
    dimension from another model) than the one given; nothing was read or written."""


class FeedbackError(RMMError):
    """A search result cannot take this feedback (already given, or unknown memory ids)."""


class MissingDependencyError(RMMError, ImportError):
    """An optional part was used without its extra installed; the message names the fix."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is not installed; run: pip install \"reflective-memory[{extra}]\""
        )
        self.package = package
        self.extra = extra


class LLMError(RMMError):
    """The configured LLM failed: it raised, timed out, or answered in a form that could not
    be used even after one repair; the stage falls back to its LLM-free form."""


class ReflectionError(RMMError):
    """A session's reflection failed for a reason other than the LLM (whose failures fall
    back to the LLM-free stages); its turns are kept and the failure is recorded on the
    session, which is retried later."""


class LLMFallbackWarning(UserWarning):
    """An LLM stage failed for one session and its LLM-free form did the work instead."""


class ResidueWarning(UserWarning):
    """Deleted text could not be cleared from a store's files yet (another connection was
    reading an older snapshot); the message says when it will be."""
