"""Turns in: logged durably at once, reflected when their session ends (explicitly, at its
size limit or after idling), on the caller's thread or the background worker's."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..config import MemoryConfig
from ..errors import DuplicateTurnError, InvalidInputError, RMMError
from ..metadata import check_metadata
from ..storage.base import SessionState, Store
from ..types import Memory, Turn, as_datetime, check_id
from .reflect import Reflector
from .repeats import add_key, numbered, session_for
from .worker import ReflectionWorker

TurnLike = Turn | Mapping[str, Any] | tuple[str, str]
log = logging.getLogger("rmm_core.write.ingest")


class Ingestor:
    """The write path of `ReflectiveMemory`: its append, end_session, add_session and
    reflect_pending, and the background worker that reflects ended and idle sessions."""

    def __init__(self, store: Store, config: MemoryConfig, reflector: Reflector) -> None:
        self.store, self.config, self.reflector = store, config, reflector
        self.worker: ReflectionWorker | None = None
        self._last_sweep: dict[str, float] = {}
        self._sweep_lock = threading.Lock()

    def start_worker(self) -> None:
        """Reflect off the request path from now on; the worker's first sweep recovers."""
        self.worker = ReflectionWorker(self._sweep, self.config.sessions.reflection_interval)
        self.worker.start()

    def stop(self) -> None:
        """Stop the worker, if one runs (a reflection under way finishes)."""
        if self.worker is not None:
            self.worker.stop()

    def append(self, turns: Sequence[TurnLike] | TurnLike, *, user_id: str, session_id: str,
               started_at: datetime | str | float | None = None,
               metadata: Mapping[str, Any] | None = None, agent_id: str | None = None,
               run_id: str | None = None, at_limit: bool = True) -> list[Turn]:
        """Log turns durably; reflect the session at its size limit (unless `at_limit` is
        False: the caller ends it at once), and the caller's idle sessions when no worker
        does (failures recorded, not raised)."""
        user_id = check_id(user_id, "user_id")
        session_id = check_id(session_id, "session_id")
        batch = coerce_turns(turns)
        meta = None if metadata is None and agent_id is None and run_id is None else \
            check_metadata(metadata, agent_id=agent_id, run_id=run_id)
        stored = self.store.append_turns(user_id, session_id, batch,
                                         as_datetime(started_at, "started_at"), time.time(),
                                         meta)
        state = self.store.session(user_id, session_id)
        limit = self.config.sessions.max_turns
        if at_limit and limit and state and state.n_turns - state.reflected >= limit and \
                state.failures < self.config.sessions.reflection_max_attempts:
            self._reflect_quietly(state)
        if self.worker is None:  # the worker reflects idle sessions, else the caller's own
            self._sweep_idle(user_id)
        return stored

    def end_session(self, *, user_id: str, session_id: str, wait: bool) -> list[Memory]:
        """Mark a session ended; reflect it now (`wait`) or leave it to the worker."""
        user_id = check_id(user_id, "user_id")
        session_id = check_id(session_id, "session_id")
        if not self.store.mark_ended(user_id, session_id):
            raise InvalidInputError(f"no session {session_id!r} for this user")
        if not wait:
            if self.worker is not None:
                self.worker.wake()
            return []
        state = self.store.session(user_id, session_id)
        return self.reflector.reflect(state) if state else []

    def add_session(self, turns: Sequence[TurnLike], *, user_id: str,
                    session_id: str | None = None, **append: Any) -> list[Memory]:
        """Append and end a session (`append` holds `append`'s other arguments). A session
        stored already is a no-op: turns stored with the same ids and words, or turns given
        without ids that the session holds already; a session given no id is named by its
        content (`write.repeats`), so that the same one is the same session."""
        if not isinstance(turns, Sequence) or isinstance(turns, (str, bytes)) or not turns:
            raise InvalidInputError("add_session needs a non-empty list of turns")
        user_id = check_id(user_id, "user_id")
        given = batch = coerce_turns(turns)
        if session_id is None:
            meta = check_metadata(append.get("metadata"), agent_id=append.get("agent_id"),
                                  run_id=append.get("run_id"))
            said = as_datetime(append.get("started_at"), "started_at")
            session_id = session_for(add_key(user_id, batch, meta, said))
        if any(t.id is None for t in batch):
            logged = self.store.turns(user_id, check_id(session_id, "session_id"))
            if not logged:  # numbered now, a second add of them is refused as a repeat
                batch = numbered(batch, session_id)
            elif [(t.speaker, t.text) for t in logged] == [(t.speaker, t.text) for t in batch]:
                return []
        try:
            # ended below, whole: reflecting at the size limit first would return nothing
            self.append(batch, user_id=user_id, session_id=session_id, at_limit=False,
                        **append)
        except DuplicateTurnError:
            if _all_stored(self.store, user_id, batch):
                return []
            if batch is given:
                raise
            # a place id the caller gave another turn: the log numbers them (`s:2.2`)
            self.append(given, user_id=user_id, session_id=session_id, at_limit=False,
                        **append)
        return self.end_session(user_id=user_id, session_id=session_id, wait=True)

    def add_sessions(self, sessions: Iterable[Mapping[str, Any]], *, user_id: str,
                     progress: bool | None) -> list[Memory]:
        """`add_session` for each dict of its arguments, with a progress bar."""
        from tqdm.auto import tqdm

        sessions = list(sessions)
        show = self.config.progress if progress is None else progress
        out: list[Memory] = []
        for session in tqdm(sessions, desc="reflecting sessions", unit="session",
                            disable=None if show is None else not show):
            out += self.add_session(user_id=user_id, **session)
        return out

    def reflect_pending(self, *, user_id: str | None = None, all_open: bool = False,
                        retry_failed: bool = False,
                        stopping: Callable[[], bool] = lambda: False) -> list[Memory]:
        """`ReflectiveMemory.reflect_pending` for every user or one, until `stopping()`
        (checked between sessions) turns true."""
        timeout = self.config.sessions.idle_timeout
        idle_before = time.time() - timeout if timeout else None
        if all_open:
            idle_before = float("inf")
        limit = None if retry_failed else self.config.sessions.reflection_max_attempts
        out: list[Memory] = []
        for state in self.store.pending_sessions(idle_before, user_id, max_failures=limit):
            if stopping():
                break
            out += self._reflect_quietly(state)
        return out

    def _sweep(self, stopping: Callable[[], bool]) -> None:
        """The background worker's round: every user's ended and idle sessions."""
        self.reflect_pending(stopping=stopping)

    def _reflect_quietly(self, state: SessionState) -> list[Memory]:
        """Reflect a session for someone other than its explicit `end_session` caller: a
        failure is already recorded on the session and logged, not raised."""
        try:
            return self.reflector.reflect(state)
        except RMMError as exc:
            log.warning("reflection of session %r failed (attempt %d): %s",
                        state.session_id, state.failures + 1, exc)
            return []

    def _sweep_idle(self, user_id: str) -> None:
        """Reflect the caller's own ended or idle sessions (checked at most once a minute per
        user): a request never pays for another user's sessions, which wait for the worker
        or `reflect_pending`."""
        timeout = self.config.sessions.idle_timeout
        now = time.time()
        if timeout and now - self._last_sweep.get(user_id, 0.0) > min(timeout, 60.0):
            with self._sweep_lock:
                self._last_sweep[user_id] = now
                while len(self._last_sweep) > 10_000:
                    self._last_sweep.pop(next(iter(self._last_sweep)))
            self.reflect_pending(user_id=user_id)


def _all_stored(store: Store, user_id: str, turns: list[Turn]) -> bool:
    """Whether every turn has an id already stored for the user with the same words."""
    stored = {t.id: t for t in store.turns(user_id)}
    return all(t.id in stored and (stored[t.id].speaker, stored[t.id].text) == (t.speaker, t.text)
               for t in turns)


def coerce_turns(turns: Sequence[TurnLike] | TurnLike) -> list[Turn]:
    """One message or a list of them, in any `Turn.coerce` form, as `Turn`s (none: refused)."""
    if isinstance(turns, (Turn, Mapping)) or (
            isinstance(turns, tuple) and len(turns) == 2 and all(isinstance(x, str)
                                                                 for x in turns)):
        turns = [turns]  # one message; a (role, text) tuple is one message too
    if isinstance(turns, (str, bytes)) or not isinstance(turns, (Sequence, Iterable)):
        raise InvalidInputError(f"turns must be a list of Turn or dict, not {type(turns).__name__}")
    batch = [Turn.coerce(t) for t in turns]
    if not batch:
        raise InvalidInputError("no turns given")
    return batch
