"""How `language/claims.py` reads a sentence: the parts the supersession rules compare."""

from __future__ import annotations

from rmm_core.language.claims import claims


def one(text: str, speakers: tuple[str, ...] = ("user",)):
    [claim] = claims(text, list(speakers))
    return claim


def values(text: str) -> set[tuple[str, str]]:
    return {(v.text, v.kind) for v in one(text).values}


def test_a_title_does_not_end_a_sentence():
    assert len(claims("My advisor is Dr. Huang. I live near campus.", ["user"])) == 2


def test_numbers_keep_their_unit_or_currency_and_identifiers_stay_whole():
    assert ("82 kg", "number") in values("I weigh 82 kg now.")
    assert ("40000 $", "number") in values("The Q3 budget is $40,000.")
    assert ("q3", "name") in values("The Q3 budget is $40,000.")


def test_weekdays_and_times_are_dates_and_a_month_after_to_is_not_a_place():
    assert {("thursday", "date"), ("6pm", "date")} <= values("Practice moved to Thursdays at 6pm.")
    assert not any(kind == "name" for _, kind in values("They moved it to June 3."))


def test_the_month_may_is_not_a_hypothetical_but_the_verb_is():
    assert not one("The report is due on May 31.").hypothetical
    assert one("We may push the report back.").hypothetical


def test_an_ending_needs_a_negation_before_anymore_and_left_over_is_not_one():
    assert one("I'm not playing football anymore.").ended
    assert not one("Do you want any more tea?").ended
    assert not one("We have 14 story points left in this sprint.").ended
    assert one("Dana left the company.").ended


def test_inflections_share_a_stem_and_a_family():
    assert {"smok"} <= one("I quit smoking.").topics & one("I smoke a lot.").topics
    assert "@job" in one("I'm between jobs.").topics
    assert "@residence" in one("We lived near the park.").topics


def test_a_relation_is_the_subject_unless_it_is_an_object_or_shared():
    assert one("My sister moved to Denver.").subject == "user's sister"
    assert one("I heard my boss quit.").subject == "user's boss"
    assert one("Sam is my boyfriend.").subject == "user"
    assert one("I eat eggs from my neighbour's hens.").subject == "user"
    assert one("My wife and I moved to Oslo.").subject == "user"


def test_a_value_named_after_from_is_the_one_left():
    claim = one("We moved from Leeds to York.")
    assert {v.text for v in claim.values if v.was} == {"leeds"}
    assert "york" in {v.text for v in claim.values if not v.was}


def test_read_as_clauses_a_question_does_not_hide_the_fact_before_it():
    text = "I only secured 3 interviews for producer roles, is that a good sign?"
    [sentence] = claims(text, ["user"])
    assert sentence.hypothetical
    fact, question = claims(text, ["user"], clauses=True)
    assert not fact.hypothetical
    assert ("3 interview", "number") in {(v.text, v.kind) for v in fact.values}
    assert question.hypothetical


def test_read_as_clauses_a_fact_asked_to_be_remembered_is_stated():
    text = "Can you remind me that it's rescheduled to March 22 at 4:30 PM?"
    stated = [c for c in claims(text, ["user"], clauses=True) if not c.hypothetical]
    assert [c.text for c in stated] == ["it's rescheduled to March 22 at 4:30 PM?"]
    assert {"march 22", "4:30"} <= {v.text for v in stated[0].values}
