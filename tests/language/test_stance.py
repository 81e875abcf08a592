"""How a statement is said (`rmm_core.language.stance`): whose news it is and whether it
states the present, in the six languages it reads; phrasings not taken from the dev set."""

from __future__ import annotations

import pytest

from rmm_core.language.stance import parties, stance

ASSISTANT = ("assistant",)


@pytest.mark.parametrize("text", [
    "user: signed the contract with the new agency yesterday, first day is monday",
    "user: My husband and I finally bought the place in Ghent",
    "user: Seit März arbeite ich bei einer Stiftung in Bonn",
    "user: on a emménagé à Rennes il y a trois semaines",
    "user: ahora trabajo desde casa para una empresa de Valencia",
    "user: da gennaio insegno in un liceo di Padova",
    "user: agora trabalho numa livraria no centro",
    "user: finished the portrait commission, I'm freelance full time since June",
    "user: María y yo abrimos la panadería en la calle Mayor",
    "user: Jetzt fahre ich jeden Tag mit dem Rad. Früher bin ich immer Auto gefahren.",
    "user: il nuovo lavoro in banca è tranquillo, esco sempre alle cinque",
    # a request that goes on to state
    "user: could you change my address on file, we moved to a bigger place in Leiden",
    "user: kannst du meine Nummer ändern, ich bin jetzt bei einem anderen Anbieter",
    "user: peux-tu noter ma nouvelle adresse, j'ai déménagé à Tours",
    "user: can you help me plan meals, my doctor put me on a low-sodium diet",
    # someone acting on the speaker
    "user: my manager finally promoted me, team lead as of monday",
    "user: Meine Vermieterin hat uns gekündigt, wir suchen was in Pankow",
    "user: mi novia me dejó en agosto y ahora vivo solo",
])
def test_ones_own_news_said_as_the_present(text):
    read = stance(text, others=ASSISTANT)
    assert read.own
    assert read.states
    assert read.present


@pytest.mark.parametrize("text", [
    "user: my stepdad retired last week, he's driving my mom crazy. I'm glad for him",
    "user: Mein Kollege hat gekündigt und geht nach Wien",
    "user: ma voisine a déménagé à Brest, elle me manque déjà",
    "user: mi prima se casó en mayo, fue precioso",
    "user: she got the job at the museum!!",
    "user: my brother got fired, he called me crying",
    "user: il a démissionné hier, il part vivre à Lyon",
])
def test_news_that_opens_on_someone_else_is_theirs(text):
    assert not stance(text, others=ASSISTANT).own


@pytest.mark.parametrize("text", [
    "user: if the rent goes up again we might look at Leipzig",
    "user: thought about switching to night shifts, decided it's not worth it",
    "user: Wenn ich mehr Geld hätte, würde ich ein Haus kaufen",
    "user: si je trouvais un poste à Lyon je partirais demain",
    "user: when I was a teenager I worked at a car wash every summer",
    "user: spending a week at my brother's in Cork, the weather is grim",
    "user: got a second round interview at Stripe next friday, any prep tips?",
    "user: Übermorgen (14 May 2025) fange ich bei der Post an, bin nervös",
    "user: la semaine prochaine je passe l'entretien pour le poste à Nantes",
    "user: dentro de dos semanas empiezo en el hospital nuevo",
    "user: was going to take the job in Leeds but the commute would have killed me",
    "user: I was so close to selling the van, then the engine behaved for once",
    "user: eines Tages ziehen wir ans Meer, das steht fest",
    "user: je travaillais à l'époque où il n'y avait pas encore de métro",
    "user: iba a dejar el gimnasio pero me quedo un mes más",
    "user: se comprassi una casa al mare smetterei di lavorare",
    "user: si vendiera el coche me compraría una moto",
    "user: se mudasse para o Porto ia sentir falta dos amigos",
    "user: estuvimos a punto de mudarnos a Bilbao, al final no",
    "user: didn't get the charge nurse job, they went with someone from outside",
    "user: toured the Rutgers campus with my dad, the library is gorgeous",
    "user: ho visitato la casa a Monza, troppo buia",
    "user: I never got the job at Stripe, they ghosted me",
    "user: je n'ai pas été prise pour le poste à Lyon",
    "user: wish I'd taken the job in Denver",
    "user: I wish I had a bigger kitchen",
    "user: j'aurais dû accepter le poste à Nantes",
])
def test_a_wish_a_weighed_choice_a_memory_a_stay_away_or_a_plan_is_not_the_present(text):
    assert not stance(text, others=ASSISTANT).present


@pytest.mark.parametrize("text", [
    "user: Gus passed away in november, he was almost 3, we got a guinea pig named Mochi",
    "user: I haven't touched beef in 4 months, lentil burgers all the way",
    "user: nearly every morning I swim at the lido now",
    "user: you'd be amazed how calm I am since I quit coffee",
    "user: never thought I'd be a morning person but the 6am swims stuck",
    # hindsight beside a present statement
    "user: I run the café on Rua Augusta now, wish I'd quit the bank sooner",
    "user: Wir wohnen jetzt auf dem Land, hätten wir nie gedacht",
    "user: je travaille de chez moi maintenant, j'aurais dû le faire avant",
    "user: ahora vivo en Cádiz, nunca lo hubiera imaginado",
    "user: adesso insegno yoga, non l'avrei mai detto",
])
def test_an_amount_a_span_looked_back_over_or_hindsight_is_still_the_present(text):
    assert stance(text, others=ASSISTANT).present


@pytest.mark.parametrize("text", [
    "user: vor zwanzig Jahren hatte ich einen Kiosk in Kiel",
    "user: il y a dix ans je vivais à Dakar, quelle époque",
    "user: hace cinco años trabajaba de camarero en Cádiz",
    "user: dieci anni fa avevo una Vespa rossa",
    "user: há quinze anos eu morava em Recife",
    "user: crashing at my sister's in Denver for the week while the floors get redone",
    "user: je suis à Montréal pour trois semaines, un stage chez un client",
    "user: estoy en Sevilla por unos días, cosas del trabajo",
    "user: für zwei Monate in Zürich, Projekt beim Kunden",
    "user: sto da mia zia a Bari per un paio di settimane, poi torno a casa",
    "user: a decade ago I drove a beat-up Civic everywhere",
    "user: in my early twenties I was a line cook in Leeds",
    "user: house-sitting in Galway for a fortnight, the cat hates me",
    "user: hace una década vivía en Quito",
    "user: my first car was a rusty Corsa, sold it for parts",
    "user: meu primeiro carro foi um Fusca 78, que saudade",
    "user: mon premier boulot était plongeur dans une brasserie",
    "user: just got back from two weeks in Crete, the dog ignored me for a day",
    "user: appena tornata da una settimana a Lecce, che caldo",
    "user: just back from a long weekend in Bruges",
    "user: back from ten days in Lisbon, jet lag is brutal",
    "user: my very first job was paper rounds",
])
def test_a_memory_of_long_ago_or_a_stay_that_ends_is_told_aside(text):
    read = stance(text, others=ASSISTANT)
    assert read.aside
    assert not read.present


@pytest.mark.parametrize("text", [
    "user: been in Denver for a month now and I love it",
    "user: I go into the office for three days a week, the rest from home",
    "user: weaned off coffee, the headaches were awful for a week but I'm fine",
    "user: ich wohne seit drei Wochen in Zürich",
    "user: just got back from pottery class, my hands are wrecked",
    "user: trabajo en remoto desde hace dos años y no vuelvo a la oficina",
    "user: sou vegetariana desde há cinco anos",
])
def test_a_stay_that_has_lasted_or_a_rhythm_is_not_told_aside(text):
    read = stance(text, others=ASSISTANT)
    assert not read.aside
    assert read.present


@pytest.mark.parametrize("text", [
    "user: the airline refunded the Lisbon flights, so that's that",
    "user: we called off the Lisbon trip, the baby is due in May",
    "user: Tom und ich haben im März Schluss gemacht",
    "user: on a rompu en mai avec Hugo, c'est mieux comme ça",
    "user: Ana y yo lo dejamos en enero",
    "user: io e Marco ci siamo lasciati a marzo",
    "user: eu e o Rui terminamos no verão",
    "user: the vet bill was the end of the horse riding lessons",
    "user: Jonas and I called it quits over the summer",
    "user: the shop gave me my money back for the blender",
    "user: Lena und ich haben uns getrennt, leider",
    "user: Paul et moi, on s'est séparés en juin",
    "user: Diego y yo nos separamos el año pasado",
    "user: I moved out of the Elm Street flat on Sunday",
])
def test_an_ending_is_read_in_each_language(text):
    assert stance(text, others=ASSISTANT).ends


def test_a_state_going_on_keeps_its_words_and_the_assistant_says_nothing_of_the_user():
    read = stance("user: still at the bakery, still up at 4am\nassistant: I moved on",
                  others=ASSISTANT)
    assert {"baker", "4am"} <= read.goes_on
    assert read.own
    assert not stance("user: what's a good bread for sandwiches?\nassistant: I love rye",
                      others=ASSISTANT).own  # a question states nothing of the asker


def test_a_question_names_whom_it_asks_about_in_one_form_for_genders():
    assert parties("Where does my brother work these days?") == {"brother"}
    assert parties("¿Dónde vive mi hermana?") == parties("¿Dónde vive mi hermano?")
    assert parties("Wer ist meine Chefin?") == parties("Wer ist mein Chef?")
    assert parties("Where do I work?") == frozenset()


@pytest.mark.parametrize("text,name", [
    ("user: Tomás finally quit the band, he says he's done with gigs", "tomás"),
    ("user: So Ines got the flat in Porto, she's moving in May", "ines"),
    ("user: Finally moved into the new place! the landlord says he fixed the boiler", None),
    ("user: Marco and I split the rent now, he's in the big room", None),
], ids=["a name and he", "after an opener", "an adverb", "the speaker too"])
def test_a_statement_that_opens_on_a_name_and_speaks_of_him_or_her(text, name):
    assert stance(text, others=ASSISTANT).opens_on == name


@pytest.mark.parametrize("text,word", [
    ("user: sigo en el hospital de Getafe, turnos de noche como siempre", "hospi"),
    ("user: mi hermano sigue en Bilbao con el mismo piso", "bilba"),
    ("user: je continue chez Decathlon, au rayon vélo", "decat"),
    ("user: continuo a lavorare in farmacia, part-time", "farma"),
    ("user: continuo na escola de Braga, agora com o 5.º ano", "escol"),
    ("user: ich arbeite weiterhin im Tierheim, samstags", "tierh"),
    ("user: ich wohne nach wie vor in Kassel", "kasse"),
    ("user: al final nos quedamos en Triana, el alquiler era mejor", "trian"),
    ("user: restiamo a Padova, il trasloco può aspettare", "padov"),
    ("user: ficamos em Coimbra mais um ano", "coimb"),
    ("user: the inhaler is always in my backpack, just in case", "inhal"),
], ids=["sigo", "sigue", "je continue", "continuo a", "continuo", "weiterhin", "nach wie vor",
        "nos quedamos", "restiamo", "ficamos", "always"])
def test_going_on_is_read_in_each_language(text, word):
    """"Sigo", "je continue", "continuo a", "weiterhin": the state of the clause goes on."""
    assert word in stance(text, others=ASSISTANT).goes_on


@pytest.mark.parametrize("question", [
    "When is the baby shower?",
    "Do I have a boyfriend?",
    "¿Estoy casado o tengo novia?",
    "Wann kommen die Kinder aus der Schule?",
    "Comment s'appelle la copine de Paul ?",
], ids=["the", "a", "o (or)", "die", "la"])
def test_an_article_names_no_one_a_question_asks_about(question):
    """An article is no owner: "the baby shower" asks about no one's baby."""
    assert parties(question) == frozenset()


@pytest.mark.parametrize("question,party", [
    ("What does my mother-in-law do for a living?", "mother-in-law"),
    ("¿Dónde trabaja ahora mi hermana?", "herman"),
    ("Où habite ma sœur maintenant ?", "sœur"),
    ("Wo wohnt meine Schwester?", "schwester"),
    ("Dove lavora la mia ragazza?", "ragazz"),
    ("Onde mora a minha irmã?", "irmã"),
])
def test_an_owner_names_whom_a_question_asks_about(question, party):
    assert parties(question) == {party}


@pytest.mark.parametrize("text", [
    "user: haha no, the red Vespa in my photos isn't mine, it's my cousin's",
    "user: I'm not the one getting married lol, it's my flatmate Jo",
    "user: c'est mon voisin qui a adopté le chiot, pas moi",
    "user: Der neue Hund ist nicht meiner, ich passe nur auf ihn auf",
    "user: el piso nuevo no es mío, es de mi hermana",
    "user: la macchina nuova non è mia, è di mio fratello",
    "user: Das Auto vor der Tür gehört nicht mir, das ist vom Nachbarn",
    "user: le vélo dans l'entrée, ce n'est pas le mien, c'est celui de Jules",
    "user: no, ese coche no es el mío, es de mi cuñado",
    "user: non è la mia, la bici rossa è di Marta",
])
def test_news_the_speaker_disowns_is_someone_elses(text):
    assert stance(text, others=ASSISTANT).disowns


@pytest.mark.parametrize("text", [
    "user: sold the Vespa last week, it's not mine anymore",
    "user: I moved to Leeds in May",
    "user: Le chien n'est plus à moi depuis le déménagement, ma sœur l'a gardé",
    "user: We moved to a new flat in Leeds, not the one I wanted though",
    "user: Wir sind umgezogen, nicht meine Idee, aber die Wohnung ist schön",
    "user: non è mio fratello che si è trasferito, sono io",
    "user: I'm not the one who cooks anymore, my partner took over",
])
def test_a_thing_that_is_no_longer_ones_own_is_a_change_not_someone_elses_news(text):
    assert not stance(text, others=ASSISTANT).disowns


@pytest.mark.parametrize("text", [
    "user: what's a fun movie for tonight, something light",
    "user: can you recommend a podcast, preferably about history?",
    "user: wie lange fährt man mit dem Zug von Köln nach Paris?",
    "user: ¿qué le regalo a un niño de 10 años, algo de ciencia?",
])
def test_a_request_alone_states_nothing(text):
    read = stance(text, others=ASSISTANT)
    assert not read.states
    assert not read.own


@pytest.mark.parametrize("text,party", [
    ("user: Le chef a changé en mars. Il est jeune et très direct", {"chef"}),
    ("user: Herr Braun ist in Rente. Er war zwanzig Jahre hier", set()),
    ("user: we have a new landlord. She answers within a day", set()),
])
def test_a_pronoun_names_no_party(text, party):
    """Whom "il", "er" or "she" stands for is not said: no party beside the roles named."""
    assert stance(text, others=ASSISTANT).parties == party
    assert not stance("user: she got the job!", others=ASSISTANT).own


@pytest.mark.parametrize("text,names", [
    ("user: finalement pas de Grèce cette année", {"grèce"}),
    ("user: dieses Jahr doch kein Italien, das Dach muss neu", {"italien"}),
    ("user: no Iceland this year after all", {"iceland"}),
    ("user: european portuguese, not brazilian", set()),
    ("user: no worries, Sam drove me", set()),
    ("user: pas d'Italie cet été, trop cher", {"italie"}),
    ("user: NoMad is still my favourite bar", set()),
])
def test_a_name_said_with_a_negation_before_it_is_negated(text, names):
    assert stance(text, others=ASSISTANT).negated == names


@pytest.mark.parametrize("text,own", [
    ("user: Mein Bruder hat gekündigt und wird Koch. Mutig!", False),
    ("user: my cousin just got engaged. so happy", False),
    ("user: my mom took Winnie, she lives with her now. down to 2 cats", True),
])
def test_a_short_exclamation_is_no_news_of_ones_own(text, own):
    """"Mutig!" after a relative's news says nothing of the speaker's own."""
    assert stance(text, others=ASSISTANT).any_own is own


def test_a_number_is_named_with_its_unit():
    read = stance("user: nights now, 7p-7a, three a week", others=ASSISTANT)
    assert {"7p", "7a"} <= read.names
    assert "7" not in read.names
