"""MemGPT working context: durable bounded core blocks and the message queue with its
pressure notice, eviction and recursive summary. `test_llm_summary_*` use scripted fake
LLMs (plain callables); the rest is LLM-free with the hash embedder."""

from __future__ import annotations

import threading

import pytest

from rmm_core import InvalidInputError, ReflectiveMemory, Turn
from rmm_core.agents.tools import search_turns
from rmm_core.agents.working import BlockSpec, ExtractiveSummarizer, LLMSummarizer, WorkingContext
from rmm_core.errors import LLMFallbackWarning
from rmm_core.models.embed import HashEmbedder
from rmm_core.text import count_words


@pytest.fixture
def path(tmp_path) -> str:
    return str(tmp_path / "working.sqlite")


def open_mem(path: str, llm=None) -> ReflectiveMemory:
    return ReflectiveMemory.open(path, embedder=HashEmbedder(), llm=llm)


def say(i: int) -> Turn:
    return Turn("user" if i % 2 == 0 else "assistant",
                f"Message {i}: my cousin Lena visited Lisbon on day {i} and liked it.")


# core blocks -------------------------------------------------------------------------------------
def test_blocks_are_edited_only_through_operations_and_persist(path):
    with open_mem(path) as mem:
        wc = mem.working_context(user_id="u1")
        assert set(wc.blocks) == {"human", "persona"}
        assert wc.blocks["human"].value == ""
        wc.core_memory_append("human", "Name: Ada")
        wc.core_memory_append("human", "Likes: tea")
        wc.core_memory_replace("human", "Likes: tea", "Likes: coffee")
        wc.core_memory_append("persona", "I am a patient tutor.")
        other = mem.working_context(user_id="u2")
        assert other.blocks["human"].value == ""
    with open_mem(path) as mem:
        blocks = mem.working_context(user_id="u1").blocks
        assert blocks["human"].value == "Name: Ada\nLikes: coffee"
        assert blocks["persona"].value == "I am a patient tutor."
        assert "Name: Ada" in mem.working_context(user_id="u1").render()


def test_block_limits_and_bad_edits_raise_and_change_nothing(path):
    with open_mem(path) as mem:
        wc = mem.working_context(user_id="u1",
                                 blocks={"human": BlockSpec(20, "the user")}, budget=400)
        wc.core_memory_append("human", "Name: Ada")
        with pytest.raises(InvalidInputError, match="limit is 20"):
            wc.core_memory_append("human", "Lives in a very long street name")
        with pytest.raises(InvalidInputError, match="blocks are \\['human'\\]"):
            wc.core_memory_append("persona", "x")
        with pytest.raises(InvalidInputError, match="is not in block"):
            wc.core_memory_replace("human", "Name: Bob", "Name: Eve")
        with pytest.raises(InvalidInputError, match="empty"):
            wc.core_memory_append("human", "   ")
        with pytest.raises(InvalidInputError):
            wc.core_memory_append("human", 3)
        assert wc.blocks["human"].value == "Name: Ada"
        wc.core_memory_replace("human", "Name: Ada", "")
        assert wc.blocks["human"].value == ""


def test_settings_are_validated(path):
    with open_mem(path) as mem:
        with pytest.raises(InvalidInputError, match="no room"):
            mem.working_context(user_id="u1", budget=600)  # two 2000-char blocks = 1000 tokens
        with pytest.raises(InvalidInputError, match="evict_to"):
            mem.working_context(user_id="u1", warn_at=0.4, evict_to=0.5)


def test_concurrent_appends_are_all_kept(path):
    with open_mem(path) as mem:
        def worker(i: int) -> None:
            mem.working_context(user_id="u1").core_memory_append("human", f"fact {i}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lines = mem.working_context(user_id="u1").blocks["human"].value.splitlines()
        assert sorted(lines) == sorted(f"fact {i}" for i in range(8))


def test_forget_erases_the_working_context(path):
    with open_mem(path) as mem:
        mem.working_context(user_id="u1").core_memory_append("human", "Name: Ada")
        mem.working_context(user_id="u1").add_message(say(0))
        mem.forget(user_id="u1")
        wc = mem.working_context(user_id="u1")
        assert wc.blocks["human"].value == ""
        assert wc.messages == []
        assert wc.usage() == 0


# the message queue -------------------------------------------------------------------------------
def small_queue(mem: ReflectiveMemory, **kw) -> WorkingContext:
    return mem.working_context(user_id="u1", session_id="chat", budget=200, unit="words",
                               blocks={"human": BlockSpec(100, "the user")}, **kw)


def test_pressure_notice_then_eviction_into_a_summary(path):
    with open_mem(path) as mem:
        wc = small_queue(mem)
        per_message = count_words(say(0).render())
        events = [wc.add_message(say(i)) for i in range(20)]
        notices = [i for i, e in enumerate(events) if e.notice]
        evictions = [i for i, e in enumerate(events) if e.evicted]
        first_warn = notices[0]
        assert (first_warn + 1) * per_message >= 0.7 * 200 > first_warn * per_message
        assert "memory pressure" in events[first_warn].notice
        first_evict = evictions[0]
        assert (first_evict + 1) * per_message >= 200 > first_evict * per_message
        assert notices == sorted(set(notices))
        assert len(notices) <= len(evictions) + 1
        # evicted down to evict_to: blocks + summary limit + remaining messages <= 50 %
        after = events[first_evict]
        assert after.usage < 0.7
        assert wc.summary
        assert "Summary of earlier messages" in wc.render()
        queued = {t.id for t in wc.messages}
        evicted = {t.id for e in events for t in e.evicted}
        assert queued.isdisjoint(evicted)
        assert len(queued) + len(evicted) == 20
        # recall storage: everything is in the turn log, and evicted messages are searchable
        assert len(mem.turns(user_id="u1", session_id="chat")) == 20
        found = search_turns(mem.turns(user_id="u1"), "day 0")
        assert found[0].text == say(0).text
        in_queue = [t.id for t in wc.messages]
    with open_mem(path) as mem:  # the queue survives a reopen
        assert [t.id for t in small_queue(mem).messages] == in_queue


def test_extractive_summary_stays_within_its_limit_and_keeps_facts():
    evicted = [Turn("user", "Hi there."), Turn("user", "My sister Maya moved to Oslo in 2021."),
               Turn("assistant", "Okay, got it. Nice.")]
    summary = ExtractiveSummarizer().summarize("", evicted, 10, count_words)
    assert summary == "user: My sister Maya moved to Oslo in 2021."
    again = ExtractiveSummarizer().summarize(summary, [Turn("user", "ok")], 10, count_words)
    assert again == summary


def test_llm_summary_is_recursive(path):
    prompts = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return f"summary {len(prompts)}"

    with open_mem(path, llm=llm) as mem:
        wc = small_queue(mem)
        for i in range(30):
            wc.add_message(say(i))
        assert len(prompts) >= 2
        assert wc.summary == f"summary {len(prompts)}"
        assert f"summary {len(prompts) - 1}" in prompts[-1]  # the previous summary is folded in


def test_llm_summary_falls_back_when_the_llm_fails_or_rambles():
    def broken(prompt: str) -> str:
        raise TimeoutError("too slow")

    evicted = [Turn("user", "My sister Maya moved to Oslo in 2021.")]
    with pytest.warns(LLMFallbackWarning, match="too slow"):
        out = LLMSummarizer(broken).summarize("", evicted, 20, count_words)
    assert "Maya" in out
    long = LLMSummarizer(lambda p: "Maya moved. " * 30).summarize("", evicted, 6, count_words)
    assert count_words(long) <= 6
