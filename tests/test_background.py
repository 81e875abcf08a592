"""The worker pool a search runs one blocking call on beside its own work. No fake LLM."""

from __future__ import annotations

import threading

import pytest

from rmm_core.background import in_background


def test_a_background_call_has_started_when_it_is_handed_back():
    """The caller gets the future once a worker runs the call (so that a busy caller does
    not keep the worker waiting for the GIL), and gets its result or its error."""
    release = threading.Event()
    future = in_background(release.wait, 10)
    assert future.running()
    release.set()
    assert future.result(10) is True
    with pytest.raises(ValueError, match="invalid literal"):
        in_background(int, "not a number").result(10)
