"""LLM calls and tokens counted per user and session."""

from __future__ import annotations

from typing import Any

from .backend import SQLBackend


class UsageSQL(SQLBackend):
    """The usage log (`storage.protocols.UsageLog`)."""

    def add_usage(self, user_id: str, session_id: str, usage: dict[str, Any]) -> None:
        with self._tx(f"user:{user_id}") as db:
            db.run("INSERT INTO llm_usage (user_id, session_id, calls, prompt_tokens, "
                   "completion_tokens, failures) VALUES (?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (user_id, session_id) DO UPDATE SET "
                   "calls = llm_usage.calls + excluded.calls, "
                   "prompt_tokens = llm_usage.prompt_tokens + excluded.prompt_tokens, "
                   "completion_tokens = llm_usage.completion_tokens + excluded.completion_tokens, "
                   "failures = llm_usage.failures + excluded.failures",
                   (user_id, session_id, int(usage.get("calls", 0)),
                    int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                    int(usage.get("failures", 0))))

    def usage(self, user_id: str | None = None) -> dict[str, int]:
        # session "" holds the calls made outside any session's reflection (respond, ...)
        sql = ("SELECT COUNT(NULLIF(session_id, '')), " + ", ".join(
            f"CAST(COALESCE(SUM({c}), 0) AS BIGINT)"
            for c in ("calls", "prompt_tokens", "completion_tokens", "failures"))
            + " FROM llm_usage")
        row = self._read(sql + (" WHERE user_id = ?" if user_id else ""),
                         (user_id,) if user_id else ())[0]
        return dict(zip(("sessions", "calls", "prompt_tokens", "completion_tokens", "failures"),
                        (int(v) for v in row)))
