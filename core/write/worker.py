"""Reflection off the request path: a daemon thread that reflects ended and idle sessions."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("rmm_core.write.worker")

_SWEEPING = threading.Lock()
"""Held during a sweep: one sweep at a time in a process, however many memories are open."""


class ReflectionWorker:
    """Runs `sweep(stopping)` every `interval` seconds, or at once when woken, until stopped;
    `sweep` should return soon after `stopping()` turns true (between two sessions)."""

    def __init__(self, sweep: Callable[[Callable[[], bool]], object], interval: float) -> None:
        self._sweep, self._interval = sweep, interval
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="rmm-reflection", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Sweep now rather than at the next interval (a session was just ended)."""
        self._wake.set()

    def stop(self) -> None:
        """Stop and wait for the thread: a reflection under way finishes first."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            with _SWEEPING:
                try:
                    self._sweep(self._stop.is_set)
                except Exception:  # a sweep never raises for one session; this is the store
                    log.exception("background reflection sweep failed; retried next interval")
            self._wake.wait(self._interval)
            self._wake.clear()
