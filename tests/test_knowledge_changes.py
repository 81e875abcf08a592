"""Knowledge that changes: supersession on write, current-first reading, `as_of`, conflicts,
and the fields everywhere a user meets them. Real stores (SQLite and PostgreSQL), the real
packaged embedder, no LLM."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from rmm_core import InvalidInputError, ReflectiveMemory
from rmm_core.ops.transfer import export_records, import_records
from rmm_core.storage import open_store

pytestmark = pytest.mark.backends

LISBON = "I live in Lisbon and work as a nurse."
BERLIN = "Big news: I moved to Berlin last week, I started a new job as a data analyst."
WEBINAR = "Our team webinar is scheduled for March 20."
MOVED = "The webinar got rescheduled to March 27."


@pytest.fixture
def mem(open_memory):
    return open_memory()


def _moved(mem: ReflectiveMemory, user: str = "ana") -> tuple[str, str]:
    lisbon = mem.add(LISBON, user_id=user, occurred_at="2024-01-10T09:00:00+00:00")[0].id
    berlin = mem.add(BERLIN, user_id=user, occurred_at="2024-06-15T09:00:00+00:00")[0].id
    return lisbon, berlin


def test_a_move_supersedes_the_old_home_and_the_new_one_comes_first(mem):
    lisbon, berlin = _moved(mem)
    hits = mem.search("Where do I live?", user_id="ana", k=3)
    assert hits[0].memory.id == berlin
    old = next(h for h in hits if h.memory.id == lisbon)
    assert old.rank == 2  # right after its successor; ranks count from 1
    assert not old.memory.current
    assert old.memory.superseded_by == berlin
    assert old.memory.valid_to == datetime(2024, 6, 15, 9, tzinfo=timezone.utc)
    assert "(changed 15 June 2024 → " in old.text
    assert "Berlin" in old.text.split("→")[1]
    assert hits[0].memory.current
    assert hits[0].memory.supersedes == [lisbon]
    assert "changed" not in hits[0].text


def test_a_rescheduled_meeting_answers_with_the_new_date_first(mem):
    mem.add(WEBINAR, user_id="ana", occurred_at="2024-02-01")
    new = mem.add(MOVED, user_id="ana", occurred_at="2024-02-10")[0]
    hits = mem.search("When is the webinar?", user_id="ana", k=2)
    assert [h.memory.id for h in hits][0] == new.id
    assert "March 20" in hits[1].text
    assert "(changed 10 February 2024 → The webinar got " \
        "rescheduled to March 27.)" in hits[1].text


def test_as_of_answers_what_was_true_then(mem):
    lisbon, berlin = _moved(mem)
    then = mem.search("Where do I live?", user_id="ana", as_of="2024-03-01")
    assert [h.memory.id for h in then] == [lisbon]
    now = mem.search("Where do I live?", user_id="ana", as_of=datetime(2024, 7, 1))
    assert [h.memory.id for h in now] == [berlin]
    assert not mem.search("Where do I live?", user_id="ana", as_of="2023-12-31").hits


def test_as_of_before_a_change_does_not_show_the_change_on_the_old_hit(mem):
    """As of March the move to Berlin had not happened: the Lisbon hit used to say
    "(changed 15 June 2024 → ...)" all the same."""
    lisbon, _ = _moved(mem)
    [then] = mem.search("Where do I live?", user_id="ana", as_of="2024-03-01")
    assert then.memory.id == lisbon
    assert "changed" not in then.text
    assert "Berlin" not in then.text
    later = mem.search("Where do I live?", user_id="ana", k=3)
    assert "(changed 15 June 2024 → " in next(h for h in later if h.memory.id == lisbon).text


def test_a_question_about_the_past_keeps_the_old_memory_in_reach(mem):
    lisbon, berlin = _moved(mem)
    ids = [h.memory.id for h in mem.search("Where did I live before Berlin?", user_id="ana",
                                           k=2)]
    assert lisbon in ids


def test_a_visit_a_plan_and_another_persons_move_supersede_nothing(mem):
    home = mem.add("I live in Lisbon.", user_id="ana", occurred_at="2024-01-10")[0].id
    for text in ("I visited Berlin last week with friends.", "I might move to Madrid someday.",
                 "My sister moved to Berlin.", "As I said, I live in Lisbon and love it."):
        mem.add(text, user_id="ana", occurred_at="2024-03-01")
    assert mem.get(home, user_id="ana").current


def test_a_contradiction_is_kept_current_on_both_sides_and_flagged(mem):
    worked = mem.add("I work with Michael every week on the budget.", user_id="ana",
                     occurred_at="2024-01-05")[0].id
    never = mem.add("I have never met Michael.", user_id="ana", occurred_at="2024-02-05")[0].id
    assert mem.get(worked, user_id="ana").conflicts == [never]
    assert mem.get(never, user_id="ana").conflicts == [worked]
    assert mem.get(worked, user_id="ana").current
    assert mem.get(never, user_id="ana").current
    hits = mem.search("Do I know Michael?", user_id="ana", k=2)
    assert {h.memory.id for h in hits} == {worked, never}
    assert all("(contradicted on " in h.text and "ask which holds)" in h.text for h in hits)


def test_a_partial_change_keeps_the_rest_of_the_memory(mem):
    old = mem.add("I adopted a beagle called Biscuit and we walk along the river every "
                  "morning. My monthly rent is 900 euros.", user_id="ana",
                  occurred_at="2024-01-10")[0].id
    mem.add("My rent went up: it is now 1,050 euros a month.", user_id="ana",
            occurred_at="2024-05-01")
    memory = mem.get(old, user_id="ana")
    assert not memory.current
    assert memory.changed_part
    assert "900" in memory.changed_part
    assert "Biscuit" not in memory.changed_part
    hit = next(h for h in mem.search("How much is my rent?", user_id="ana", k=2)
               if h.memory.id == old)
    assert "(partly changed 1 May 2024 → " in hit.text


def test_reflected_sessions_supersede_too(mem):
    mem.add_session([{"speaker": "user", "text": "I'm vegetarian and I cook lentils a lot."}],
                    user_id="ana", session_id="s1", started_at="2024-01-10")
    mem.add_session([{"speaker": "user", "text": "I eat meat again these days, my doctor "
                                                 "told me to."}],
                    user_id="ana", session_id="s2", started_at="2024-04-10")
    mem.end_session(user_id="ana", session_id="s1")
    mem.end_session(user_id="ana", session_id="s2")
    mem.reflect_pending()
    memories = mem.store.memories("ana")
    old = next(m for m in memories if "vegetarian" in m.text)
    new = next(m for m in memories if "meat" in m.text)
    assert old.superseded_by == new.id
    assert new.supersedes == [old.id]


def test_an_update_that_changes_a_fact_supersedes_the_earlier_one(mem):
    home = mem.add("I live in Lisbon.", user_id="ana", occurred_at="2024-01-10")[0].id
    note = mem.add("My favourite cafe is near the office.", user_id="ana",
                   occurred_at="2024-02-10")[0].id
    mem.update(note, "I moved to Porto in March.", user_id="ana")
    assert mem.get(home, user_id="ana").superseded_by == note


def test_supersession_is_a_version_event_in_history(mem):
    lisbon, berlin = _moved(mem)
    versions = mem.history(lisbon, user_id="ana")
    assert [v.reason for v in versions] == ["created", "superseded"]
    assert versions[-1].source == berlin
    assert versions[-1].text == LISBON


def test_the_fields_survive_reopening_export_and_import(open_memory, store_target):
    mem = open_memory()
    lisbon, berlin = _moved(mem)
    mem.close()
    store = open_store(store_target)
    try:
        records = json.loads(json.dumps(list(export_records(store, "ana"))))
        import_records(store, records, user_id="copy")
        copied = store.memories("copy")
    finally:
        store.close()
    old, new = (next(m for m in copied if word in m.text) for word in ("Lisbon", "Berlin"))
    assert old.superseded_by == new.id != berlin
    assert new.supersedes == [old.id]
    assert old.valid_to == datetime(2024, 6, 15, 9, tzinfo=timezone.utc)
    assert open_memory().get(lisbon, user_id="ana").superseded_by == berlin


def test_supersession_can_be_turned_off(open_memory):
    mem = open_memory(supersession=False)
    lisbon, _ = _moved(mem)
    assert mem.get(lisbon, user_id="ana").current
    assert "changed" not in mem.search("Where do I live?", user_id="ana")[1].text


def test_bad_dates_are_refused_with_a_typed_error(mem):
    mem.add(LISBON, user_id="ana")
    with pytest.raises(InvalidInputError, match="as_of"):
        mem.search("Where do I live?", user_id="ana", as_of="last spring")
    with pytest.raises(InvalidInputError, match="occurred_at"):
        mem.add(BERLIN, user_id="ana", occurred_at=[2024])
    assert len(mem.store.memories("ana")) == 1


def test_another_scope_is_not_superseded(mem):
    home = mem.add(LISBON, user_id="ana", agent_id="travel", occurred_at="2024-01-10")[0].id
    mem.add(BERLIN, user_id="ana", agent_id="jobs", occurred_at="2024-06-15")
    assert mem.get(home, user_id="ana").current


def test_hit_metadata_carries_validity_for_both_frameworks(mem):
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_rmm import RMMRetriever
    from llamaindex_rmm import hits_to_nodes

    lisbon, berlin = _moved(mem)
    docs = RMMRetriever(memory=mem, user_id="ana", k=2).invoke("Where do I live?")
    meta = {d.id: d.metadata for d in docs}
    assert meta[lisbon]["current"] is False
    assert meta[lisbon]["superseded_by"] == berlin
    assert meta[lisbon]["valid_to"].startswith("2024-06-15")
    assert meta[berlin]["current"] is True
    assert meta[berlin]["supersedes"] == [lisbon]
    nodes = hits_to_nodes(mem.search("Where do I live?", user_id="ana", k=2))
    node = next(n for n in nodes if n.node.id_ == lisbon)
    assert node.node.metadata["current"] is False
    assert node.node.metadata["valid_from"].startswith("2024-01-10")
    assert "superseded_by" not in node.node.get_content(metadata_mode="llm")


def test_a_schema_6_store_gains_the_validity_column_on_open(open_memory, store_target):
    from backends import run_sql

    mem = open_memory()
    home = mem.add(LISBON, user_id="ana", occurred_at="2024-01-10")[0].id
    mem.close()
    run_sql(store_target, ["ALTER TABLE memories DROP COLUMN validity",
                           "UPDATE meta SET value = '6' WHERE key = 'schema_version'"])
    mem = open_memory()
    assert mem.get(home, user_id="ana").current
    mem.add(BERLIN, user_id="ana", occurred_at="2024-06-15")
    assert not mem.get(home, user_id="ana").current
