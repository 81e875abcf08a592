"""The LLM write path end to end with a real local model (Qwen2.5-Coder-1.5B-Instruct, Q4
GGUF from the `local-llm` extra, run in-process by xllamacpp). Slow: a few minutes on CPU."""

from __future__ import annotations

from datetime import datetime

import pytest

from rmm_core import ReflectiveMemory, Turn

pytestmark = pytest.mark.slow

SESSIONS = [
    ("s1", datetime(2023, 5, 8), [
        Turn("Ann", "Guess what, I adopted a beagle puppy yesterday! His name is Rex.", "1:0"),
        Turn("Bob", "That's wonderful! How old is he?", "1:1"),
        Turn("Ann", "Ten weeks. He already loves chewing my shoes.", "1:2"),
        Turn("Bob", "Ha. I'm training for the Berlin marathon in September.", "1:3"),
        Turn("Ann", "Wow, good luck with the training!", "1:4"),
    ]),
    ("s2", datetime(2023, 6, 2), [
        Turn("Ann", "My beagle Rex learned to sit this week, I'm so proud of him.", "2:0"),
        Turn("Bob", "Smart dog! My marathon training is going well, I ran 30 km.", "2:1"),
        Turn("Ann", "30 km is a lot, you'll be ready for Berlin.", "2:2"),
    ]),
]


@pytest.fixture(scope="module")
def local_llm():
    pytest.importorskip("xllamacpp", reason='needs pip install "reflective-memory[local-llm]"')
    from rmm_core.models.local_llm import LocalLLM

    return LocalLLM(n_ctx=4096, max_tokens=384)


def test_real_llm_extracts_with_valid_refs_and_merges_repeats(tmp_path, embedder, local_llm):
    mem = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder, llm=local_llm,
                                stages={"llm_timeout": 300})
    ids = {t.id for _, _, turns in SESSIONS for t in turns}
    for session_id, started, turns in SESSIONS:
        mem.add_session(turns, user_id="u", session_id=session_id, started_at=started)
    memories = mem.memories(user_id="u")
    usage = mem.usage(user_id="u")
    print("\n".join(f"{m.refs} {m.text!r} v{len(m.versions)}" for m in memories), usage)
    assert memories
    assert all(m.refs and set(m.refs) <= ids for m in memories)
    assert any(m.attrs.get("source") == "llm" for m in memories)
    assert usage["sessions"] == 2
    assert usage["calls"] <= 6 + usage["failures"] * 2
    # the dog and the marathon come up again in session 2: at least one of them is merged
    # into its session-1 memory, which then holds both provenances and both versions
    merged = [m for m in memories if len(m.versions) >= 2]
    assert merged, memories
    for m in merged:
        assert {r[0] for r in m.refs} == {"1", "2"}
        assert m.versions[0].reason == "created"
        assert m.versions[0].refs == tuple(
            r for r in m.refs if r.startswith("1:"))
    assert len(memories) < 5  # 3 topics at most once each would be 3; no full duplication
    mem.close()
