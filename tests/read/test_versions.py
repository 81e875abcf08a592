"""Versions of one fact newest first at read time (`rmm_core.read.versions`): real
embeddings, a real SQLite file, changes that the write rules do not link."""

from __future__ import annotations

import numpy as np
import pytest

from rmm_core import ReflectiveMemory
from rmm_core.read.versions import answers_first, closeness, newest_first
from rmm_core.types import Memory, MemoryHit

BARISTA = ("I'm a barista at Blue Bottle downtown.", "2024-01-10")
BANK = ("Three weeks into the bank job, I don't miss the coffee shop rush at all.",
        "2024-06-15")
CAFE = ("Je travaille comme serveuse dans un café à Lyon.", "2024-01-10")
RESTAURANT = ("Je travaille comme serveuse dans un restaurant à Marseille, les pourboires sont "
              "meilleurs.", "2024-06-15")


@pytest.fixture
def opened(tmp_path, embedder):
    made = []

    def open_with(*said: tuple[str, str]) -> ReflectiveMemory:
        mem = ReflectiveMemory.open(str(tmp_path / f"m{len(made)}.sqlite"), embedder=embedder)
        made.append(mem)
        for text, when in said:
            mem.add(text, user_id="ana", occurred_at=when)
        return mem

    yield open_with
    for mem in made:
        mem.close()


@pytest.mark.parametrize("old,new,question", [
    (BARISTA, BANK, "Where do I work?"),
    (CAFE, RESTAURANT, "Où est-ce que je travaille ?"),
], ids=["en", "fr"])
def test_an_implicit_change_comes_first_and_marks_the_old_fact(opened, old, new, question):
    mem = opened(old, new)
    assert all(m.current for m in mem.memories(user_id="ana"))  # no rule linked them
    top, second = mem.search(question, user_id="ana", k=2)
    assert top.memory.text == new[0]
    assert top.current is True
    assert second.memory.text == old[0]
    assert second.current is False
    assert second.metadata()["current"] is False
    assert "(may have changed 15 June 2024 → " + new[0].split()[0] in second.text


def test_the_old_fact_said_first_is_moved_below(opened, embedder):
    """Ranked old first, the newer version moves right before it."""
    mem = opened(BARISTA, BANK)
    by_text = {m.text: m for m in mem.memories(user_id="ana")}
    old, new = (MemoryHit(by_text[text], 1.0, text, n) for n, text in
                enumerate((BARISTA[0], BANK[0]), 1))
    vectors = embedder.embed([BARISTA[0], BANK[0], "Where do I work?"])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = {old.memory.id: vectors[:1], new.memory.id: vectors[1:2]}
    moved = newest_first([old, new], "Where do I work?", vectors[2], rows)
    assert [h.memory.id for h in moved] == [new.memory.id, old.memory.id]
    assert moved[1].current is False
    kept = newest_first([old, new], "Where do I work?", vectors[2], rows, now=False)
    assert kept == [old, new]


def test_answers_that_state_the_askers_own_come_first_now_and_then():
    """A question put to the assistant or a wish outranking the asker's own statement, all
    equally near the question: the statement comes first; for a question about then
    (`now=False`) a wish is left where it ranks, the question to the assistant is not."""
    said = ["user: what's a good name for a fantasy team?\nassistant: Victorious Secret.",
            "user: if the rent goes up we might move to Porto",
            "user: I live in Lisbon, in Alfama"]
    hits = [MemoryHit(Memory(str(n), "ana", text, str(n), [f"t{n}"],
                             speakers=["user", "assistant"]), 1.0, text, n)
            for n, text in enumerate(said)]
    query_vec = np.eye(4, dtype=np.float32)[0]
    rows = {h.memory.id: query_vec[None, :] for h in hits}

    def order(now: bool) -> list[str]:
        close = closeness(hits, query_vec, rows)
        return [h.memory.id for h in answers_first(hits, "Where do I live?", close, now=now,
                                                   others=["assistant"])]

    assert order(now=True) == ["2", "0", "1"]
    assert order(now=False) == ["1", "2", "0"]


@pytest.mark.parametrize("news,own", [
    ("user: Diego finally got the head chef job, he starts monday. I want to get him a gift",
     "user: I'm a line cook at a ramen place in Austin"),
    ("user: Stefan wechselt in die Pflegeleitung, er hat es verdient. Ich schenke ihm was",
     "user: Ich bin Krankenpfleger auf der Intensivstation in Graz"),
])
def test_a_named_persons_news_comes_after_the_askers_own(news, own):
    """News that opens on a name the other answers do not say and speaks of "he" is that
    person's, even when the speaker adds a line of their own."""
    said = [news, own]
    hits = [MemoryHit(Memory(str(n), "ana", text, str(n), [f"t{n}"], speakers=["user"]),
                      1.0, text, n) for n, text in enumerate(said)]
    query_vec = np.eye(4, dtype=np.float32)[0]
    close = closeness(hits, query_vec, {h.memory.id: query_vec[None, :] for h in hits})
    first = answers_first(hits, "What is my job?", close, others=["assistant"])[0]
    assert first.memory.text == own


def test_a_relatives_fact_does_not_replace_ones_own(opened):
    mem = opened(("I live in Lisbon.", "2024-01-10"), ("My sister lives in Berlin.", "2024-06-15"))
    hits = list(mem.search("Where do I live?", user_id="ana", k=2))
    assert hits[0].memory.text == "I live in Lisbon."
    assert all(h.current is True for h in hits)
    assert all("may have changed" not in h.text for h in hits)


@pytest.mark.parametrize("older,newer,question", [
    ("We have a beagle named Waffles.",
     "My mom adopted a second beagle, so she has two dogs now!", "What pets do I have?"),
    ("Ich arbeite als Lehrerin an einer Grundschule in Leipzig.",
     "Meine Schwester hat ihren Job bei der Bank gekündigt und wird Tischlerin.",
     "Was ist mein Beruf?"),
    ("Je suis infirmière à l'hôpital de Lille.",
     "Mon mari a démissionné de sa banque pour ouvrir une boulangerie !",
     "Quel est mon métier ?"),
], ids=["en", "de", "fr"])
def test_ones_own_present_answers_before_a_relatives_news(opened, older, newer, question):
    """Among the hits that answer, what the asker says of their own present comes before a
    relative's news that outranked it."""
    mem = opened((older, "2024-01-10"), (newer, "2024-06-15"))
    hits = list(mem.search(question, user_id="ana", k=2))
    assert [h.memory.text for h in hits] == [older, newer]
    assert all(h.current is True for h in hits)


def test_a_question_about_the_past_keeps_the_old_fact_first_and_unmarked(opened):
    mem = opened(BARISTA, BANK)
    for hits in (mem.search("Where did I work before?", user_id="ana", k=2),
                 mem.search("Where do I work?", user_id="ana", k=2, as_of="2024-12-01")):
        assert hits[0].memory.text == BARISTA[0]
        assert all(h.current is True for h in hits)
        assert all("may have changed" not in h.text for h in hits)


@pytest.mark.parametrize("newer", [
    ("My brother moved to Leeds last month, gonna miss having him around.", "relative"),
    ("If the rent goes up again we might leave Lisbon for Porto.", "hypothetical"),
    ("Still in Lisbon, still loving the light here.", "goes on"),
    ("When I was a student I lived in a tiny room in Coimbra.", "long ago"),
], ids=lambda n: n[1])
def test_what_does_not_change_ones_fact_leaves_it_current(opened, newer):
    mem = opened(("I live in Lisbon, in Alfama.", "2024-01-10"), (newer[0], "2024-06-15"))
    hits = list(mem.search("Where do I live?", user_id="ana", k=2))
    assert all(h.current is True for h in hits)
    assert all("may have changed" not in h.text for h in hits)


@pytest.mark.parametrize("older,newer,question", [
    ("Ho un gatto, Tobia, un certosino di quattro anni.",
     "Sono appena tornata da una settimana in Puglia con due cani e un asino, Tobia mi "
     "ignora.", "Che animali ho?"),
    ("I live in Lisbon, in Alfama.", "Just got back from two weeks in Crete, Alfama feels so "
     "quiet.", "Where do I live?"),
    ("I'm at Portland Community College doing my gen eds.",
     "Toured Oregon State with my mom, the dorms were nicer than I thought.",
     "What school do I go to?"),
    ("Vivimos en Gràcia, en un piso sin ascensor.",
     "Uf, vaya mes. Estuvimos a punto de irnos a Girona, al final nos quedamos en Gràcia.",
     "¿Dónde vivo?"),
], ids=["back from a week", "back from two weeks", "a visit", "nos quedamos"])
def test_a_return_a_visit_or_a_stay_leaves_the_older_fact_current(opened, older, newer,
                                                                  question):
    """Back from a week away, a campus toured, "nos quedamos": nothing changed."""
    mem = opened((older, "2024-01-10"), (newer, "2024-06-15"))
    hits = list(mem.search(question, user_id="ana", k=2))
    assert len(hits) == 2
    assert all(h.current is True for h in hits)


@pytest.mark.parametrize("older,newer,question", [
    ("Trabajo de enfermera en el hospital de Getafe.",
     "Sigo de enfermera en el hospital, ahora con turnos de noche.", "¿Dónde trabajo?"),
    ("Je suis infirmière à l'hôpital de Nantes.",
     "Je continue comme infirmière à l'hôpital, mais de nuit maintenant.",
     "Où est-ce que je travaille ?"),
], ids=["sigo", "je continue"])
def test_a_state_said_to_go_on_leaves_the_older_fact_current(opened, older, newer, question):
    """"Sigo de enfermera", "je continue comme infirmière": the older fact goes on."""
    mem = opened((older, "2024-01-10"), (newer, "2024-06-15"))
    hits = list(mem.search(question, user_id="ana", k=2))
    assert len(hits) == 2
    assert all(h.current is True for h in hits)


def test_a_change_far_from_the_question_still_replaces_and_questions_are_no_versions(opened):
    """The later version is reached through its nearness to the older one; a question the
    user asked in between states nothing and is not marked."""
    mem = opened(("I'm a barista at Blue Bottle, mostly morning shifts.", "2024-01-10"),
                 ("What's a good way to descale an espresso machine at home?", "2024-03-02"),
                 ("Three weeks into the bank job, I don't miss the coffee shop rush at all.",
                  "2024-06-15"))
    hits = list(mem.search("Where do I work?", user_id="ana", k=3))
    assert hits[0].memory.text.startswith("Three weeks into the bank job")
    barista = next(h for h in hits if h.memory.text.startswith("I'm a barista"))
    assert barista.current is False
    asked = [h for h in hits if h.memory.text.startswith("What's a good way")]
    assert all(h.current is True for h in asked)


@pytest.mark.parametrize("other", ["assistant", "Ben"])
def test_talk_between_two_people_is_left_as_ranked(tmp_path, embedder, other):
    """Whose fact "I" states changes from line to line when two people talk: a change Ana
    tells the assistant is read as versions, the same lines in a talk with Ben are not."""
    with ReflectiveMemory.open(str(tmp_path / "talk.sqlite"), embedder=embedder) as mem:
        for n, (when, line) in enumerate((
                ("2024-01-10", "I'm a barista at Blue Bottle, mostly morning shifts."),
                ("2024-06-15", "Three weeks into the bank job, I don't miss the coffee shop "
                               "rush at all.")), 1):
            mem.add_session([{"speaker": "Ana", "text": line},
                             {"speaker": other, "text": "Nice, how is the team treating you?"}],
                            user_id="ana", session_id=f"s{n}", started_at=when)
        hits = list(mem.search("Where does Ana work?", user_id="ana", k=2))
        assert len(hits) == 2
        marks = [h.current for h in hits]
        assert marks == ([True, False] if other == "assistant" else [True, True])


@pytest.mark.parametrize("later,changed", [
    ("Will do. Pixel knocked my medal off the shelf this morning, by the way.", False),
    ("The flat is so quiet without Pixel, I keep looking for her on the sofa.", True),
    ("We had to put our sweet old Pixel down, the vet was very kind to us.", True),
], ids=["goes on about her", "ends", "put down"])
def test_naming_the_same_pet_again_changes_nothing_unless_it_ends(opened, later, changed):
    """A later statement that names what the older one named, nothing new, goes on about
    it; one that says it ended is a change."""
    mem = opened(("I adopted a cat last weekend! A grey tabby called Pixel, from the "
                  "shelter in Alvalade.", "2024-02-03"), (later, "2024-03-18"))
    hits = list(mem.search("What pet do I have?", user_id="ana", k=2))
    adopted = next(h for h in hits if h.memory.text.startswith("I adopted"))
    assert (adopted.current is False) is changed
    assert (hits[0] is adopted) is not changed


def test_a_stored_partial_change_puts_its_successor_first(opened):
    """An answer the bank marked as partly changed on write comes after what changed it,
    even when the question's words are not those of the changed part."""
    mem = opened(("I pay for Netflix, Hulu and Disney+, it's a lot", "2023-03-06"),
                 ("cancelled Hulu and Disney+, kept only Netflix. saved like $30 a month",
                  "2023-09-05"))
    hits = list(mem.search("Which streaming services do I pay for?", user_id="ana", k=2))
    assert hits[0].memory.text.startswith("cancelled Hulu")
    assert not hits[1].memory.current


def test_capitals_are_no_condition(opened):
    """"IF was making me obsessive" (intermittent fasting) is said as the present: "IF" is
    no "if"."""
    mem = opened(("I do intermittent fasting, 16:8, eating window noon to 8", "2024-03-25"),
                 ("gave up on intermittent fasting, IF was making me obsessive about food. back "
                  "to three meals a day and a snack", "2024-09-06"))
    hits = list(mem.search("Am I still doing intermittent fasting?", user_id="ana", k=2))
    assert hits[0].memory.text.startswith("gave up on intermittent fasting")
    assert hits[1].current is False



@pytest.mark.parametrize("later,changed", [
    ("Priya finally moved out of Denver :( she got a place in Austin and already texts me "
     "about the heat", False),
    ("Pepper is being such a good auntie to Moose already, he's a 12 week old lab, lets him "
     "steal her toys", False),
], ids=["a friend's news", "the pets named"])
def test_a_statement_opening_on_a_name_is_that_persons_news(opened, later, changed):
    """A statement that opens on a name and speaks of a "he" or "she", not of the speaker,
    is someone else's news; one that names the older statement's pet is about it, and a
    second dog beside Pepper replaces nothing: both hold, and the reader counts them."""
    mem = opened(("I'm in Denver with my dog Pepper, came here for grad school and never "
                  "left lol", "2024-01-10"), (later, "2024-06-15"))
    question = "Where do I live?" if not changed else "How many dogs do I have?"
    hits = list(mem.search(question, user_id="ana", k=2))
    older = next(h for h in hits if h.memory.text.startswith("I'm in Denver"))
    assert (older.current is False) is changed


@pytest.mark.parametrize("later,changed", [
    ("still swimming twice a week, but I gave up tennis, the elbow won", True),
    ("still swimming twice a week and still playing tennis on sundays", False),
    ("still swimming twice a week, but my tennis racket lives in the cupboard now, the "
     "elbow won", False),
], ids=["part ends", "all goes on", "part named, no end said"])
def test_a_state_going_on_in_part_is_a_partial_change(opened, later, changed):
    """A later statement that says part of the older one goes on and that another part
    ended changes that part; one where all it says goes on does not, and neither does one
    that names the other part without saying it ended (a mention is no version: the racket
    in the cupboard may be a rest, not the end of tennis)."""
    mem = opened(("I swim twice a week and play tennis on sundays", "2024-01-10"),
                 (later, "2024-06-15"))
    hits = list(mem.search("What sports do I do?", user_id="ana", k=2))
    older = next(h for h in hits if h.memory.text.startswith("I swim"))
    assert (older.current is False or not older.memory.current) is changed


def test_the_quickstarts_cat_stays_current_beside_a_later_mention(tmp_path, embedder):
    """The packaged sample: "Pixel knocked my medal off the shelf" (and the assistant's reply
    about Pixel) comes close to "What pet does Maya have?", but names only the cat the
    adoption named, and ends nothing: the adoption keeps its place, unmarked."""
    from rmm_core.ops.sessions_file import read_sessions, sample_path

    with ReflectiveMemory.open(str(tmp_path / "q.sqlite"), embedder=embedder) as mem:
        mem.add_sessions(read_sessions(sample_path()), user_id="maya")
        hits = list(mem.search("What pet does Maya have?", user_id="maya", k=2))
    adopted = [h for h in hits if "adopted a cat" in h.text]
    assert adopted
    assert adopted[0].current is not False


@pytest.mark.parametrize("question,old,asked,new", [
    ("Wer ist mein Chef?", "Mein Chef heißt Herr Becker, er ist sehr ruhig und geduldig",
     "wie lange fährt man mit dem Zug von Hamburg nach Kopenhagen?",
     "Herr Becker ist zu einer anderen Firma gewechselt, jetzt leitet Frau Özdemir die "
     "Abteilung. Sie ist sehr direkt"),
    ("Qui est mon chef ?", "Mon chef s'appelle Marc Dubois, il est plutôt cool",
     "combien de temps faut-il pour aller de Lyon à Genève en train ?",
     "Marc est parti à la retraite, c'est Nadia Benali qui dirige le service maintenant. "
     "Elle est très exigeante"),
], ids=["de", "fr"])
def test_a_question_asked_in_between_replaces_no_role(opened, question, old, asked, new):
    """A question states nothing of anyone: it is no version of "my boss", whatever its
    nearness; the change that names the new boss and then says "she" is one."""
    mem = opened((old, "2024-01-10"), (asked, "2024-03-02"), (new, "2024-07-15"))
    hits = list(mem.search(question, user_id="ana", k=3))
    assert hits[0].memory.text == new
    assert hits[1].memory.text == old
    assert hits[1].current is False
    assert "→ " + new.split()[0] in hits[1].text


def test_a_request_that_states_the_change_replaces_the_old_fact(opened):
    mem = opened(("my email is sam.k@outlook.com", "2024-01-10"),
                 ("how long do I boil an egg for a runny yolk?", "2024-03-02"),
                 ("could you update my email, I switched everything over to "
                  "sam.kowalski@proton.me", "2024-07-15"))
    hits = list(mem.search("What is my email address?", user_id="ana", k=2))
    assert hits[0].memory.text.startswith("could you update my email")
    assert hits[1].current is False


def test_a_plan_called_off_by_naming_it_with_a_negation_is_a_change(opened):
    """"no Iceland this year" names only what the plan named, yet says it is off."""
    mem = opened(("we're going to Iceland this summer, Reykjavik and the ring road",
                  "2024-01-10"),
                 ("no Iceland this year after all, the car needed a new engine and that ate "
                  "the savings", "2024-05-15"))
    first, second = mem.search("Are we going to Iceland?", user_id="ana", k=2)
    assert first.memory.text.startswith("no Iceland")
    assert second.current is False


@pytest.mark.parametrize("question,old,new", [
    ("What do I use for music?", "I listen to everything on Spotify, we have the family plan",
     "Apple Music has the lossless stuff and the classical app, wish I'd moved off Spotify "
     "years ago"),
    ("Trinke ich Kaffee?", "Ich trinke keinen Kaffee, nur Tee",
     "Seit der Reise nach Rom trinke ich jeden Morgen einen Espresso, hätte ich nie gedacht"),
], ids=["en", "de"])
def test_a_change_told_with_hindsight_replaces_the_old_fact(opened, question, old, new):
    """"wish I'd moved off Spotify years ago" beside a present statement is no wish."""
    mem = opened((old, "2024-01-10"), (new, "2024-06-15"))
    first, second = mem.search(question, user_id="ana", k=2)
    assert first.memory.text == new
    assert second.current is False


def test_a_number_keeps_its_unit_when_versions_are_read(opened):
    """"6p-6a" after "6am to 6pm" names other times, not the same 6 again."""
    mem = opened(("I work 6am to 6pm at the depot, three days a week", "2024-01-10"),
                 ("switched to nights: 6p-6a, three nights a week. my body clock is wrecked",
                  "2024-06-15"))
    first, second = mem.search("What hours do I work?", user_id="ana", k=2)
    assert first.memory.text.startswith("switched to nights")
    assert second.current is False
