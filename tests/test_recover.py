"""Crash recovery is an explicit step: `recover=False` opens a store as it is, leaving the
sessions a crash left open for a later open (or the caller) to reflect. Real SQLite file,
real embedder."""

from rmm_core import ReflectiveMemory, Turn


def test_recover_false_leaves_open_sessions_for_a_later_open(tmp_path, embedder):
    path = str(tmp_path / "m.sqlite")
    mem = ReflectiveMemory.open(path, embedder=embedder)
    mem.append([Turn("Ana", "I adopted a grey cat called Miso last week.", id="t1")],
               user_id="u1", session_id="s1")
    mem.end_session(user_id="u1", session_id="s1", wait=False)
    mem.store.close()  # a crash before the ended session was reflected

    reader = ReflectiveMemory.open(path, embedder=embedder, recover=False)
    assert reader.memories(user_id="u1") == []
    assert [t.id for t in reader.turns(user_id="u1")] == ["t1"]
    reader.close()

    recovered = ReflectiveMemory.open(path, embedder=embedder)
    assert [m.refs for m in recovered.memories(user_id="u1")] == [["t1"]]
    recovered.close()
