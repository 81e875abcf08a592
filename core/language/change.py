"""How sure it is that a later statement changed an earlier one's fact.

People mention what they told the memory many times for every time it changes: a complaint
about the car, the partner away for a week, a plan weighed and dropped. Nearness, a shared
subject and a later date cannot tell such a mention from a change, so both the write rules
(`write.supersede`) and the read steps (`read.versions`) ask this module, and assert a
change (mark it, note it, move its successor first) only when it is `SURE`:

- **read**: the rules read both statements' language (`languages.READ`); in another one
  nothing they say is evidence, so nothing is asserted;
- **stated**: the later one states the present of the person asked about (the speaker,
  or "my sister" when the question asks about her), not a question, a plan, an offer, a
  wish, a stay away, a one-off exception ("just this week") or someone else's news
  (`stance`); a long message is read in its sentences that name the fact (`_stated`);
- **repeats**: the words of the earlier statement's own that the later one says again ("the
  golf" after "I drive a blue Golf"). A later statement that names the fact's value is about
  it going on, unless it says that value ended ("sold the golf") — a mention is no version;
- **ends**: it says what it repeats ended or was left.

The confidence is the share of such pairs that were changes on the cases it was set on
(`CONFIDENCE`), so `SURE` reads as a precision.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

import regex

from .claims import topics_of
from .languages import READ, language, stop_words_of
from .stance import STEM, asks, ends_near, parties, role, speaks_of_self, stance, theirs, weighs
from .tokens import terms
from .values import MONTHS, values

_FLAGS = regex.IGNORECASE | regex.VERSION1
_LINE = regex.compile(r"^([^\s:][^\s:]*(?: [^\s:]+)?):\s+(.*)$", regex.MULTILINE)
"""A line of a speaker's, "user: ..." or "Maya Lopez: ...": a name of one or two words ("switched
to nights: 6p-6a" is no speaker's line)."""
_SENTENCE = regex.compile(r"(?<=[.!?…;])\s+|\s*\n\s*")
_PARTS = regex.compile(r"[,;:]\s|\s(?:but|aber|mais|pero|ma|mas)\s", regex.IGNORECASE)

ONE_OFF = regex.compile(
    r"\b(?:just (?:this|for this|for the|for one) (?:week|weekend|time|once|day|month)|"
    r"(?:only|just) (?:this|today|tonight|for (?:today|tonight|now|once))|for once|this time|"
    r"back to normal|as usual tomorrow|"
    r"ausnahmsweise|nur (?:diese|dieses|heute|für heute)|diesmal|dieses mal|"
    r"exceptionnellement|pour une fois|juste (?:cette|ce|pour)|cette fois|"
    r"excepcionalmente|por una vez|solo (?:esta|este|hoy|por hoy)|esta vez|"
    r"eccezionalmente|per una volta|solo (?:questa|questo|oggi|per oggi)|stavolta|"
    r"excepcionalmente|por uma vez|só (?:esta|este|hoje|por hoje)|desta vez|"
    r"while|meanwhile|während|pendant que|mientras|mentre|enquanto)\b|"
    # called off this once: "rehearsal's cancelled this week", "7:42 cancelled. again."
    r"\b(?:cancel+ed|called off|skipped|closed|abgesagt|ausgefallen|geschlossen|annulée?s?|"
    r"fermée?s?|cancelad[oa]s?|suspendid[oa]s?|cerrad[oa]s?|annullat[oa]|saltat[oa]|"
    r"chius[oa]|fechad[oa]s?)\b[^.!?]{0,40}?[.!?]?\s*\b(?:this week(?:end)?|today|tonight|"
    r"again|diese Woche|heute|schon wieder|cette semaine|aujourd'hui|ce soir|encore|"
    r"esta semana|hoy|esta noche|otra vez|questa settimana|oggi|stasera|di nuovo|hoje|"
    r"de novo)\b", _FLAGS)
"""A one-off exception to a fact that goes on ("moved piano to thursday just this week",
"rehearsal's cancelled this week"), or a state that lasts while something else does ("at
my parents' while the pipes are fixed")."""


SURE = 0.6
"""Least confidence of a change that is asserted: below it both statements stay as they
rank, unmarked, each with its date."""
CONFIDENCE = {"replaces": 0.7, "new": 0.7, "ends": 0.6, "near": 0.25, "mention": 0.1}
"""The share of changes among the pairs of each kind (`Evidence.kind`) that search read as
versions on the cases the rules were set on (updates_dev, updates_dev_more, writer A's
look-alikes, the base-rate mentions), counted with one change for every five mentions and
one more of each (docs/benchmarks.md, "Changes asserted only when sure")."""


OFFER = regex.compile(
    r"\b(?:offer\w*|applied|applying|application|interview\w*|shortlist\w*|"
    r"Angebot\w*|beworben|Bewerbung\w*|Vorstellungsgespräch\w*|"
    r"offre\w*|postulé|candidature\w*|entretien\w*|"
    r"oferta\w*|me postulé|postulación|entrevista\w*|"
    r"offert\w*|candidat\w*|colloqui\w*|"
    r"proposta\w*|candidatei|candidatura)\b", _FLAGS)
"""An offer, an application or an interview: a choice still open, no change yet."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a later statement shows about an earlier one's fact."""

    read: bool
    stated: bool
    repeats: frozenset[str]
    ends: bool
    tied: bool = True
    """Something other than nearness of meaning ties the later statement to the question:
    the embedder that found the pair reads their language, or it shares a word's root with
    the question, or it speaks of the person ("my", "ich", "mi"): nearness alone, in a
    language the embedder does not read, pairs a request for a recipe with a home."""
    replaces: bool = False
    """It states a value in place of the earlier one's, which it no longer says: "Ab Januar
    zahle ich 1.080 Euro warm" after "950 Euro warm", a restaurant in Marseille after a café
    in Lyon. Naming the value and stating a different one is no mere mention."""
    fresh: bool = False
    """It says something is new: a name the earlier one did not say, a value said changed,
    "now", the first days of something ("three weeks into the bank job"). A statement in
    other words that says nothing new is as likely the same thing again ("the squat rack
    was taken for 40 minutes" after joining the gym)."""

    @property
    def kind(self) -> str | None:
        """"ends" (names the earlier value and says it ended), "replaces" (states another in
        its place), "mention" (names it, and it goes on), "new" (in other words, saying
        something is new), "near" (in other words, nothing new); None when it is no
        evidence (another language, no statement of the present, nothing ties it to the
        question)."""
        if not (self.read and self.stated):
            return None
        if self.ends:
            return "ends"
        if self.repeats:
            return "replaces" if self.replaces else "mention"
        if not self.tied:
            return None
        return "new" if self.fresh else "near"

    @property
    def confidence(self) -> float:
        """How sure it is that the later statement changed the fact (`CONFIDENCE`)."""
        return 0.0 if self.kind is None else CONFIDENCE[self.kind]

    @property
    def sure(self) -> bool:
        return self.confidence >= SURE


def evidence(old: str, new: str, *, question: str = "", value: str | None = None,
             replaced: bool = False, cued: bool = False,
             others: Collection[str] = ("assistant",),
             meaning: Collection[str] | None = None) -> Evidence:
    """The evidence `new` (a later memory's text) gives that it changed `old`'s fact, for a
    `question` about it when there is one (its words name the attribute, not the value).
    `value`: the words that state the earlier fact's value, when the caller knows them (the
    write rules' claims; else every word of `old` but the question's); `replaced`: the
    caller found a value of the same kind in its place (the write rules' "10,000 requests" to
    "50,000 requests"); `cued`: it found a word saying something changed in the very claim
    that changed (the write rules' cue: "shifted standup to 10:15"); `meaning`: the
    languages whose meaning found the pair (the embedder's; None: any)."""
    return _evidence(old, new, question, value, replaced, cued,
                     frozenset(o.casefold() for o in others),
                     None if meaning is None else frozenset(meaning))


@lru_cache(maxsize=4096)
def _evidence(old: str, new: str, question: str, value: str | None, replaced: bool,
              cued: bool, others: frozenset[str], meaning: frozenset[str] | None
              ) -> Evidence:
    said_old, said_new = _own(old, others), _own(new, others)
    said = language(f"{said_old} {said_new} {question}")
    now, before = stance(new, others=tuple(others)), stance(old, others=tuple(others))
    asked, words = _words(question, said), _words(said_new, said)
    repeats = (_words(said_old if value is None else value, said) - asked) & (words - asked)
    whom = parties(question) or (before.parties if not before.own else frozenset())
    # of someone asked about ("my boss"), a statement that names them as the earlier one
    # did ("Herr Becker ist gewechselt") speaks of them too
    part = _stated(said_new, repeats | asked, said)
    if part and part != said_new:  # of a long message, the sentences that state the fact
        words, now = _words(part, said), stance(part, others=tuple(others))
        repeats &= words
    stated = now.states and now.present and not theirs(now, before) and \
        (before.states or not said_old.strip()) and \
        (bool(now.parties & whom or before.parties & whom and repeats) if whom
         else now.own) and bool(part)
    # the thing both name, the question's words too ("gave up on IF" for "am I still
    # doing IF?"), may be said to end; what goes on ("still doing the msc") is confirmed,
    # and what the fact said too ("cuarto sin ascensor") ends nothing new
    both = (_words(said_old, said) & words) | repeats
    open_ = {w for w in both if w[:STEM] not in now.goes_on and not role(w)}
    ends = bool(open_) and (
        _ends(part or said_new, open_) and not _ends(said_old, open_) or
        any(_word(n) in open_ for n in now.negated))  # "no Iceland this year after all"
    tied = (meaning is None or said in meaning or not question or bool(asked & words) or
            _roots(question, said) & _roots(said_new, said) or speaks_of_self(said_new)) \
        and not _elsewhere(question, said_new)
    about = " ".join(_about(part or said_new, repeats | asked, said, short=_FEW))
    replaces = replaced or bool(repeats) and _new_value(said_old, about, said)
    fresh = replaces or cued or _new_value(said_old, about, said, named_only=True) or \
        says_changed(about) or bool(_FIRST.search(about) or _SINCE.search(about))
    return Evidence(said in READ, stated, frozenset(repeats), ends, tied, replaces, fresh)


_FEW = 3
"""Sentences of a message that speaks of one matter."""


def _stated(text: str, words: frozenset[str], said: str | None) -> str:
    """What of `text` states something of `words` rather than leaving it open or passing (a
    one-off, an offer, a choice weighed, a time ahead); "" when nothing does. A message of a
    few sentences speaks of one matter ("Got an offer from Lisbon. Thinking of taking it."),
    so it states all or nothing; a longer one speaks of many, so its sentences that name
    `words` each speak for themselves ("moved the meeting to 30 March, it makes no sense
    without them" states the move; a trip planned in another sentence leaves it be)."""
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    if len(sentences) <= _FEW:
        passing = ONE_OFF.search(text) or any(OFFER.search(s) or weighs(s) for s in sentences)
        return "" if passing else text
    naming = [s for s in sentences if _words(s, said) & words] or sentences[:1]
    return " ".join(s for s in naming if not _passing(s, words, said))


def _passing(sentence: str, words: frozenset[str], said: str | None) -> bool:
    """Whether a sentence leaves open or passing what its clauses that name `words` say:
    each of them is an offer or weighed, or the sentence tells a one-off."""
    clauses = [c for c in _PARTS.split(sentence) if _words(c, said) & words]
    return bool(ONE_OFF.search(sentence)) or all(
        OFFER.search(c) or weighs(c) for c in clauses or [sentence])


def _ends(text: str, words: Collection[str]) -> bool:
    """Whether a clause of `text` that states (no question) says one of `words` ended."""
    return any(ends_near(c, lambda w: _word(w) in words)
               for c in _clauses(text) if not asks(c))


_FIRST = regex.compile(
    r"\b(?:(?:first|1st) (?:day|week|weekend|month|shift|semester|term)|"
    r"(?:\d+|one|two|three|four|five|six|a few|couple of) (?:days|weeks|months) (?:in|into)|"
    r"erste[nrs]? (?:Tag|Woche|Wochenende|Monat|Schicht|Semester)|"
    r"premi(?:er|ère) (?:jour|semaine|week-end|mois|semestre)|"
    r"primer(?:a|o)? (?:día|semana|fin de semana|mes|semestre)|"
    r"prim[oa] (?:giorno|settimana|weekend|mese|semestre)|"
    r"primeir[oa] (?:dia|semana|fim de semana|mês|semestre)|"
    # how long a new state has held: "day 90 of being my own boss", "6 months of soda
    # water", "100 Tage ohne Zigarette", "seis meses sin fumar"
    r"(?:day|week|month|tag|jour|día|giorno|dia) \d+ (?:of|at|in|ohne|de|di|da|sin|senza)|"
    r"(?:\d+|one|two|three|four|five|six|a few|zwei|drei|vier|fünf|sechs|deux|trois|quatre|"
    r"cinq|six|dos|tres|cuatro|cinco|seis|due|tre|quattro|cinque|sei|dois|três|quatro) "
    r"(?:days|weeks|months|years|Tage|Wochen|Monate|jours|semaines|mois|días|semanas|meses|"
    r"giorni|settimane|mesi|dias) (?:of|without|sober|clean|smoke-free|ohne|sans|sin|senza|"
    r"sem|de)\b)\b", _FLAGS)
"""The first days of something new ("three weeks into the bank job", "erste Woche im
Gesundheitsamt", "primer mes en la academia"), or how long a new state has held ("6 months
of soda water at the bar"): said in other words, it is still news."""
_SINCE = regex.compile(
    r"\b(?:since (?:the|my|i|we|last|\d|january|february|march|april|may|june|july|"
    r"august|september|october|november|december)|ever since|seit (?:dem|der|ich|wir|\w+ "
    r"(?:Wochen|Monaten|Jahren))|seit (?:Januar|Februar|März|April|Mai|Juni|Juli|August|"
    r"September|Oktober|November|Dezember)|depuis (?:le|la|l'|que|\d|janvier|février|"
    r"mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre)|"
    r"desde (?:el|la|que|\d|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|"
    r"octubre|noviembre|diciembre)|da quando|dal(?:la|l')? |desde (?:o|a|que))", _FLAGS)
"""Since when a state holds ("since the baby arrived", "seit Juni", "depuis l'opération"):
a statement that dates its state says it began."""


_INNER_CAPITAL = regex.compile(r"(?<=[\p{L}\p{N},;'\"]\s+)(?!I['’])\p{Lu}\p{Ll}[\p{L}'’-]*")
"""A capitalised word inside a sentence (not "I'm", not shouted in capitals): a name,
except in German, where nouns are capitalised too."""


def _new_value(old: str, new: str, said: str | None, *, named_only: bool = False) -> bool:
    """Whether `new` states a value in place of one of `old`'s, old's no more said and
    new's not said before: names inside a sentence (not in German, where nouns are
    capitalised too) where old said others, none of them said again or the new ones said as
    now (`_NOW`: "the Fitbit snapped so now I wear an Apple Watch"; not "the Corolla's at
    the mechanic so I'm driving a loaner Camry"); or a value of a kind both state one of
    (`values`): a contact, or one beside a word that says what holds from now ("1.080 Euro
    warm ab Januar" after "950 Euro warm"). `named_only`: whether `new` says a name `old`
    does not, whatever old named."""
    if said != "de":
        named = [{_word(w) for w in _INNER_CAPITAL.findall(t)} for t in (old, new)]
        fresh = named[1] - _words(old, said)
        if named_only:
            return bool(fresh)
        if named[0] and fresh and (not named[0] & _words(new, said) or _NOW.search(new)):
            return True  # a name in place of old's: none said again, or said as now
    if named_only:
        return False
    before, after = values(old), values(new)
    gone = before if _FROM_TO.search(new) else before - after
    kinds = {k for k, _ in after - before} & {k for k, _ in gone}
    return "contact" in kinds or bool(kinds) and says_changed(new)


_FROM_TO = regex.compile(
    r"\b(?:from|von|de|da|van)\s+(?:[^\s,.;]+\s+){1,3}?(?:to|auf|à|a|al|au|para|naar)\s", _FLAGS)
"""A value said as where a change came from ("upped it from £400 to £650", "von 100 auf 250",
"de 300 a 350"): the earlier value, said again, holds no more."""


def replaces_value(old: str, new: str) -> bool:
    """Whether `new` states a value in place of one `old` states, of a kind both state
    (`values`: a contact, or a number, date or time beside words saying it changed), or a
    name where old named others (`_new_value`)."""
    return _new_value(old, new, language(f"{old} {new}"))


def says_changed(text: str) -> bool:
    """Whether `text` says a value changed or what holds from now on (`_NOW`, `_CHANGED`):
    a number or a date beside such words is a new value, not one said in passing."""
    return bool(_NOW.search(text) or _CHANGED.search(text))


_CHANGED = regex.compile(
    r"\b(?:resched\w*|postponed|pushed (?:[\w']+ ){0,4}?(?:back|out|to)|"
    r"moved (?:[\w']+ ){0,3}to|bumped (?:[\w']+ ){0,3}to|brought forward|delayed|extended|"
    r"shortened|increased|decreased|raised|lowered|reduced|upped|adjusted|changed|updated|"
    r"cut|(?:down|up|dropped|rose|fell|grew) to|shifted|slipped|revised|switched|hired|"
    r"promoted|became|correction|scratch that|went back|as of|"
    r"(?:passed|reached|hit|crossed) [\d$€£]|started (?:\w+ing|at|as|on)|"
    r"verschoben|verlegt|erhöht|gesenkt|geändert|"
    r"reporté\w*|décalé\w*|déplacé\w*|augmenté\w*|baissé\w*|changé\w*|"
    r"pospuest[oa]|aplazad[oa]|movid[oa]|cambi[óé]|cambiad[oa]|aument[óé]|subi[óo]|baj[óé]|"
    r"rinviat[oa]|spostat[oa]|aumentat[oa]|cambiat[oa]|"
    r"adiad[oa]|mud(?:ou|ei)|aumentou|passou para)\b", _FLAGS)
"""Words that say a value was changed: rescheduled, raised, moved to, verschoben, reporté."""


_NOW = regex.compile(
    r"\b(?:now|these days|nowadays|instead|going forward|from now on|any ?more|starting|"
    r"switched (?:to|over)|changed to|"
    r"jetzt|mittlerweile|inzwischen|stattdessen|ab|"
    r"maintenant|désormais|dorénavant|à la place|à partir|dès|"
    r"ahora|ya|en vez|en lugar|a partir|"
    r"ora|adesso|invece|d'ora in poi|ormai|da (?:ora|oggi)|"
    r"agora|em vez|hoje em dia)\b", _FLAGS)
"""Words that say what holds from now on, against what held (a closed class in the six
languages): a number or a day said beside one is a new value, not one in passing."""


def _roots(text: str, said: str | None) -> set[str]:
    """The first four letters of its words: "wohne" and "Wohnung", "trabajo" and
    "trabajar" share theirs."""
    return {w[:4] for w in _words(text, said) if not w.isdigit()}


def _elsewhere(question: str, said: str) -> bool:
    """Whether a statement is about another attribute than the question asks of ("I work as
    a nurse" for "where do I live?"): both name attribute families (`claims.FAMILIES`,
    English), and none is the same."""
    asked = {t for t in topics_of(question) if t.startswith("@")}
    told = {t for t in topics_of(said) if t.startswith("@")}
    return bool(asked and told) and not asked & told


def _about(text: str, words: Collection[str], said: str | None, short: int = 0
           ) -> list[str]:
    """The sentences of `text` that say how it is put: the first, and those that say one of
    `words` (the fact's and the question's); all of them in a text of at most `short`."""
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    if len(sentences) <= short:
        return sentences
    return sentences[:1] + [s for s in sentences[1:] if _words(s, said) & set(words)]


def _clauses(text: str) -> list[str]:
    return [c for s in _SENTENCE.split(text) for c in _PARTS.split(s) if c.strip()]


def _own(text: str, others: frozenset[str]) -> str:
    """The lines of `text` said by anyone but `others` (the assistant), all of it when it
    names no speaker; without the dates grounding added after relative times ("this year
    (2024)"): the person did not say them."""
    text = _GROUNDED.sub("", text)
    lines = _LINE.findall(text)
    if not lines:
        return text
    return "\n".join(said for who, said in lines if who.casefold() not in others)


_GROUNDED = regex.compile(r"\s*\((?:the (?:week|weekend) of )?[^()]*\d{4}\)")


def _words(text: str, said: str | None = None) -> frozenset[str]:
    """The words that can name a value (`_word`): no stop word (of the language `said`) or
    month name, at least three letters (a pair of characters in scripts written without
    spaces)."""
    stops = stop_words_of(said)
    text = _THOUSANDS.sub("", text)
    return frozenset(w for t in terms(text) if t not in stops and len(t) > 1 and not (
        t.isascii() and t.isalpha() and len(t) < 3) for w in [_word(t)] if w not in MONTHS)


def _word(term: str) -> str:
    """A word as compared: a number without its plural ("48s" is "48"), else its first
    `STEM` letters ("keeping Mondays" keeps "Monday")."""
    term = term.lower()
    number = _NUMBER.fullmatch(term)
    return number[1] if number else term[:STEM]


_THOUSANDS = regex.compile(r"(?<=\d)[,.\s\u202f](?=\d{3}\b)")
"""A thousands separator: "10,000" is one number, not "10" and "000"."""
_NUMBER = regex.compile(r"(\d[\d.,:]*)(?:s|'s)?")
