"""How a person says something: about whom, and whether as how things are now. Two things
said at different times about one question are versions of one fact only if both are about
the same person and the newer one states the present ("we're in Tacoma now") rather than a
wish, a plan weighed and dropped, a memory of long ago, a short stay away, or the old state
going on ("still in Leith").

Read from closed classes of function words (pronouns, possessives, family and social roles,
conditionals, continuity adverbs) in English, German, French, Spanish, Italian and
Portuguese: words any sentence of these kinds uses, whatever the fact is about. It is no list
of change cues, so a change said without "moved" or "now" still counts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache

import regex

from .timeref import ahead, find_relative
from .tokens import stop_words, terms

_FLAGS = regex.IGNORECASE | regex.VERSION1
_LINE = regex.compile(r"^([^\s:][^:\n]{0,40}):\s+(.*)$", regex.MULTILINE)
_SENTENCE = regex.compile(r"(?<=[.!?…])\s+|\s*\n\s*|(?<=\p{Extended_Pictographic})\s+")

_ROLES = (
    # English
    r"sister|brother|sis|bro|mom|mum|mother|dad|father|parents|son|daughter|kids?|child|"
    r"children|teenager|baby|wife|husband|partner|boyfriend|girlfriend|bf|gf|fianc[ée]e?|"
    r"ex|friends?|buddy|bestie|coworkers?|co-workers?|colleagues?|boss|manager|"
    r"neighbou?rs?|roommates?|flatmates?|housemates?|cousins?|aunt|uncle|grandma|grandpa|"
    r"grandmother|grandfather|grandparents|in-laws|niece|nephew|"
    # German
    r"schwester|bruder|mutter|mama|vater|papa|eltern|sohn|tochter|kinder|frau|mann|freund|"
    r"freundin|kollegen?|kollegin|chef|chefin|nachbarn?|nachbarin|mitbewohner(?:in)?|"
    r"cousine?|tante|onkel|oma|opa|"
    # French
    r"s(?:œ|oe)ur|fr[èe]re|m[èe]re|p[èe]re|fils|fille|femme|mari|ami|amie|copain|copine|"
    r"coll[èe]gue|patron|patronne|voisins?|voisines?|colocs?|cousins?|cousines?|tante|oncle|"
    r"grand-m[èe]re|grand-p[èe]re|belle-m[èe]re|beau-p[èe]re|"
    # Spanish
    r"hermanas?|hermanos?|madre|padre|mam[áa]|pap[áa]|padres|hij[oa]s?|esposa|esposo|marido|"
    r"pareja|novi[oa]|amig[oa]s?|jef[ea]|vecin[oa]s?|compañer[oa]s?|prim[oa]s?|tí[oa]|"
    r"abuel[oa]s?|suegr[oa]s?|"
    # Italian
    r"sorella|fratello|genitori|figli[oa]?|moglie|marito|ragazz[oa]|amic[oa]|amici|capo|"
    r"colleg[ah]i?|vicin[oa]|vicini|cugin[oa]|zi[oa]|nonn[oa]|suocer[oa]|"
    # Portuguese
    r"irm[ãa]|irm[ãa]o|m[ãa]e|pai|pais|filh[oa]s?|namorad[oa]|chefe|colegas?|vizinh[oa]s?|"
    r"tia|tio|av[óô]")
_ROLE = rf"(?:step-?|half-?)?(?:{_ROLES})(?:-in-law)?"
"""A role with its kin: a stepdad, a half-sister, a mother-in-law."""
_OWNER = (r"my|our|his|her|their|mein\w*|unser\w*|sein\w*|ihr\w*|mon|ma|mes|notre|nos|son|sa|"
          r"ses|mi|mis|su|sus|nuestr[oa]s?|(?:il |la |i |le )?(?:mi[oae]|miei|nostr[oaie]|"
          r"su[oae]|suoi)|(?:o |a )?(?:meu|minha|meus|minhas|nosso|nossa|seu|sua)")
"""Whose someone is: "my sister", "mi hermana", "ma sœur", "meine Schwester"."""
_ARTICLE = r"the|der|die|das|le|la|les|el|los|las|lo|il|gli|o|a|os|as"
"""An article: a statement opening on "the boss" speaks of someone else, a question about
"the baby shower" or "a boyfriend" asks about no one's baby or boyfriend."""
_OPENER = (r"^(?:(?:so|ok|okay|well|also|btw|update|lol|ugh|omg|and|but|oh|hey|ps|news|"
           r"sadly|anyway|fun fact|guess what|und|alors|bon|du coup|bueno|pues|oye|allora|"
           r"comunque|ent[ãa]o|bem)[\s,:!.]+)*")
"""Words a chat message opens with before its subject."""
_PRONOUNS = ("he", "she", "er", "sie", "il", "elle", "ils", "elles", "él", "ella", "ellos",
             "ellas", "lui", "lei", "loro", "ele", "ela", "eles", "elas")
"""Whom a sentence may open on without naming them: someone other than the speaker, but
not said who ("Er ist jung" of the new head of department)."""
_THIRD = regex.compile(
    _OPENER + rf"(?:(?:{_OWNER}|{_ARTICLE})\s+(?:[\w'-]+\s+){{0,2}}?(?P<role>{_ROLE})\b"
    r"(?!\s+and\s+I\b)|"
    rf"(?P<role>{'|'.join(_PRONOUNS)})\b(?!\s+(?:mi[oae]|miei|su[oae]|suoi|nostr[oaie])\b))",
    _FLAGS)
"""A sentence that opens on someone other than the speaker: "my sister moved", "he quit".
A name alone is not read as one: a sentence's first word is capitalised whatever it is."""
_WE = regex.compile(r"\b(?:and I|and me|me and|und ich|et moi|moi et|y yo|e io|e eu)\b", _FLAGS)
""""My wife and I moved": the speaker's fact as much as the other's."""

_WEIGHED = regex.compile(
    r"\b(?:if|would|might|wonder(?:ing)?|what if|thinking (?:about|of)|was (?:gonna|going to)|"
    r"(?:this|so) close to|a punto de|stav\w+ per|beinahe|um ein Haar|"
    r"thought (?:about|of)|consider(?:ing|ed)|(?:almost|nearly)(?!\s+(?:\d|every|all|"
    r"always|half|twice|a (?:year|month|week|day)|one|two|three|four|five|six|seven|eight|"
    r"nine|ten|twenty|thirty|forty|fifty|a hundred))|maybe|someday|one day|"
    r"daydream\w*|wish|decided against|passed on|turned (?:it |them )?down|talked me out|"
    r"said no|didn't get|did not get|never got|(?:turned|shot) me down|rejected me|"
    r"got rejected|nicht bekommen|pas (?:été )?(?:eu|prise?|retenue?)|"
    r"no me (?:dieron|cogieron|eligieron)|"
    r"non (?:mi hanno preso|ho avuto|l'ho avuto)|não (?:consegui|fui escolhid[oa])|"
    r"wenn|falls|würde\w*|wäre\w*|hätte\w*|könnte\w*|überleg\w*|vielleicht|irgendwann|"
    r"eines Tages|wollte\w*|"
    r"si (?:je|j'|on|tu|il|elle|nous)|s'il|j'ai failli|failli|je me demande|peut-être|"
    r"j'hésite|(?:je|j'|tu|il|elle|on)\s*\w+(?:rais|rait)|un jour|j'allais|"
    r"si (?:pudiera|tuviera|fuera|me|lo|la|nos|algún)|quizás?|tal vez|estuve pensando|"
    r"pens[ée] en|algún día|iba a|"
    r"se (?:potessi|avessi|fossi|io)|forse|pensavo|volevo|un giorno|\w+rebbe|"
    # "if" with a past subjunctive: si vendiera, se vendessi, se vendesse
    r"si \w+(?:ara|iera)|se \w+(?:assi|essi|issi|asse|esse|isse)|"
    r"(?:vorr|potr|far|andr|sar|avr)ei|"
    r"se eu|às vezes penso|talvez|pensei em|pensando em|um dia|quase(?!\s+\d))\b",
    _FLAGS)
"""A condition, a wish or a choice weighed: nothing it says has happened."""
_HINDSIGHT = regex.compile(
    r"\b(?:wish (?:I'd|I had|we'd|we had) \w+(?:ed|en|wn|ne|t)|"
    r"hätten? (?:ich|wir) (?:das )?(?:nie|nicht) gedacht|"
    r"n'aurais jamais (?:cru|pensé)|j'aurais dû|"
    r"nunca (?:lo )?hubiera (?:pensado|imaginado|creído)|"
    r"non (?:l')?avrei mai (?:pensato|detto|creduto)|"
    r"nunca teria (?:pensado|imaginado))\b", _FLAGS)
"""Hindsight ("wish I'd ditched the old kindle years ago", "hätte ich nie gedacht"): a past
that did not happen; in a clause beside one that states the present, no wish."""
_LONG_AGO = regex.compile(
    r"\b(?:when I was|as a (?:kid|child|teen)|growing up|back (?:when|then)|"
    r"back in (?:the day|high school|college|school|uni|\d{4})|remember when|"
    r"remember(?:ed)?|reminds me of|in high school|years ago|decades? ago|"
    r"in my (?:early |mid |late )?(?:teens|twenties|thirties|forties|fifties|[2-5]0s)|"
    r"als ich (?:klein|jung|kind)|als Kind|damals|früher|vor \w+ Jahr(?:en|zehnten)|"
    r"vor einem Jahrzehnt|mit (?:zwanzig|dreißig|vierzig|[2-5]0)|"
    r"quand j'(?:étais|avais)|petite?,|(?:étant|quand j'étais) enfant|autrefois|"
    r"à l'époque|l'époque où|il y a \w+ ans|il y a (?:une|\w+) décennies?|"
    r"de (?:pequeñ|niñ)[oa]|cuando (?:era|tenía|trabajaba|vivía|estudiaba)|"
    r"me acord[ée] de|me acuerdo de|(?<!desde )hace \w+ años|hace (?:una|\w+) décadas?|"
    r"da (?:piccol|bambin)[oa]|quando ero|mi ricordo|\w+ anni fa|\w+ decenni? fa|"
    r"em criança|quando (?:eu )?era|lembro-me|de pequen[oa]|(?<!desde )há \w+ anos|"
    r"há (?:uma|\w+) décadas?|"
    # "my first car was": what came first is past
    r"(?:my|our) (?:very )?first \w+ (?:was|were)|mein\w* erst\w* \w+ (?:war|waren)|"
    r"(?:mon|notre) premier \w+ (?:était|a été|c'était)|(?:ma|notre) première \w+ "
    r"(?:était|a été)|mi primer\w* \w+ (?:fue|era)|(?:il mio|la mia) prim[oa] \w+ "
    r"(?:era|è stat[oa]|fu)|(?:o )?meu primeiro \w+ (?:foi|era)|(?:a )?minha primeira \w+ "
    r"(?:foi|era))\b",
    _FLAGS)
"""A memory of long ago, told in passing."""
_SPANS = (r"(?:day|night|week|weekend|fortnight|month|summer|semester|Tag|Nacht|Woche|"
          r"Wochenende|Monat|jour|nuit|semaine|week-end|mois|día|noche|semana|mes|"
          r"fin de semana|giorn|nott|"
          r"settiman|dia|noite|mês|meses|fim de semana)\w*")
_COUNT = (r"(?:the|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|"
          r"un par de|um par de|un paio di|ein\w*|zwei|drei|vier|fünf|zehn|ein paar|un|une|"
          r"deux|trois|quatre|cinq|dix|quelques|una|dos|tres|cuatro|cinco|diez|unos|unas|"
          r"due|tre|quattro|cinque|dieci|qualche|um|uma|dois|duas|três|quatro|dez|\d+)"
          r"(?: (?:long|short|quick))?")
"""How many days or weeks: "a", "ten", "ein paar", "quelques", "un paio di", "a long"."""
_AWAY = regex.compile(
    r"\b(?:spending (?:a|the|two|three|some|christmas|easter|summer|\d+)|visiting|"
    r"pet-?sitting|on (?:vacation|holiday)|for the weekend|staying (?:with|at)|visited|"
    r"toured|besichtigt|visité|visitamos|visitato|visitei|"
    r"zu Besuch|besuche|im Urlaub|"
    r"je passe (?:une|deux|trois|quelques|le|la|les)|en vacances|"
    r"de visita|de vacaciones|pasando (?:unos|una|el|la)|"
    r"in vacanza|in visita|de férias|"
    # back from a stay of a set length: "got back from a week in Crete"
    r"(?:back from|zurück (?:aus|von)|rentré\w* (?:de|d')|de vuelta de|volví de|"
    rf"tornat[oa] da|rientrat[oa] da|voltei de|de volta de) {_COUNT} {_SPANS}|"
    r"temporarily|vorübergehend|temporairement|temporalmente|temporaneamente|"
    r"temporariamente)\b",
    _FLAGS)
"""A stay away that ends: a visit, a holiday, looking after someone's pet, a return from
a week away (not from anything: "back from class")."""
_STAY = regex.compile(
    rf"\b(?:for|für|pour|por|durante|per) {_COUNT} {_SPANS}\b"
    rf"(?!\s+(?:a|an|per|each|every|pro|par|por|al|alla|a la|à|na) {_SPANS})(?<!\bbeen\b.*)"
    r"(?!.*\b(?:now|already)\b)", _FLAGS)
"""A stay of a set length, said in a statement's first clause ("at my in-laws in Phoenix for
the month", "für drei Wochen bei meiner Oma"): it ends. Not one that has lasted it ("been
here for a month now") nor a rhythm ("two days a week")."""
_DISOWNS = regex.compile(
    r"\b(?:(?:is|are|was|were)(?: not|n't) (?:mine|ours)|not (?:mine|ours|me|us)\b|"
    r"(?:I'm|I am|we're|we are) not the ones?|"
    r"pas (?:à )?(?:moi|nous)|pas (?:le|la|les) (?:mien|nôtre)\w*|ni moi|"
    r"nicht (?:meiner|meins|unserer|unseres|ich|wir)\b|gehört (?:nicht (?:mir|uns)|"
    r"(?:mir|uns) nicht)|"
    r"no (?:es|son|era) (?:(?:el|la|los|las) )?(?:mío|mía|míos|mías)|no (?:soy|fui) yo|"
    r"(?:non (?:è|sono) (?:(?:il|la|i|le) )?(?:mi[oae]|miei|nostr[oaie])|"
    r"não (?:é|são) (?:(?:o|a|os|as) )?(?:meu|minha|meus|minhas|nosso|nossa))"
    r"\b(?!\s+\p{L})|"
    r"non (?:io|sono io)|não (?:sou|fui) eu)",
    _FLAGS)
"""The speaker disowns what is told: "isn't mine", "not the one moving", "pas moi": someone
else's news, however much it sounds like the speaker's."""
_ANYMORE = regex.compile(r"\bany ?more\b", _FLAGS)
""""Anymore" anywhere in a sentence that disowns: "I'm not the one who cooks anymore" is a
change of the speaker's own."""
_GOES_ON = regex.compile(
    r"\b(?:still|always|staying|stays?|sticking|keeping|remain\w*|it is|immer|siempre|sempre|"
    r"noch|weiterhin|nach wie vor|bleib\w*|toujours|encore|garde|reste|"
    r"todavía|aún|(?:me|nos|se) qued(?:o|a|amos|an|é|ó|aron)|ancora|rest(?:o|a|iamo|ano)|"
    r"riman\w+|rimango|ainda|fic(?:o|a|amos|am)|"
    # "to go on" in its persons: continuo a, je continue, sigo, sigue, continúa
    r"sig(?:o|ue|ues|uen)|seguimos|continu(?:o|a|e|es|as|am|an|ons|ent|iamo|amos|ano)|"
    r"contin[úu](?:o|a|as|an))\b",
    _FLAGS)
"""Words that say a state goes on: with the older statement's own words, no change."""
_NAME = regex.compile(r"(?<=[\p{L}\p{N},;:'\"]\s+)\p{Lu}[\p{L}'’-]+|\d(?:[\d.,:]*\d)?\p{L}*")
"""A name or a number: a capitalised word inside a sentence, or digits with the letters
after them ("7am" and "7p" are other times)."""
_CAPITAL = regex.compile(r"\b\p{Lu}[\p{L}'’-]+|\d(?:[\d.,:]*\d)?\p{L}*")
"""A capitalised word anywhere (a name that opens a sentence too), or digits."""
_NEGATED = regex.compile(r"\b(?i:(?:no|not|pas de|kein\w*|sin|senza|nessun\w*|sem|nada de)\s+|"
                         r"pas d['’])(\p{Lu}[\p{L}'’-]+)", regex.VERSION1)
"""A name said with a negation before it: "finalement pas de Grèce cette année", "no
Japan this year"."""
_ON_ME = regex.compile(
    r"\b(?:kicked|fired|promoted|hired|transferred|laid|let|dumped|left|dropped) (?:me|us)\b|"
    r"\b(?:hat|haben) (?:mich|uns) (?:\w+ )?(?:rausgeworfen|gekündigt|befördert|verlassen)\b|"
    r"\bme (?:despidió|despidieron|ascendió|ascendieron|echó|echaron|dejó)\b", _FLAGS)
"""A statement that opens on someone acting on the speaker ("my dad kicked me off the
family plan", "mi jefe me despidió"): the speaker's news."""
_I = regex.compile(r"I(?:['’](?:m|ve|d|ll))?$")
"""The speaker's own "I": no name."""
_GROUNDED = regex.compile(r"\s*\((?:the (?:week|weekend) of )?[^()]*\d{4}\)")
"""The date grounding added after a relative time: no name the person said."""
_ENDS = regex.compile(
    r"\b(?:without|no more|not (?:[\w']+ ){0,3}any ?more|\w+n't (?:[\w']+ ){0,3}any ?more|"
    r"no longer|gone|sold|cancel+ed|quit|stopped(?! by)|"
    r"ended(?! up)|broke up|split up|passed away|died|put (?:[\w']+ ){0,4}?down|buried|lost|"
    r"gave (?:\w+ )?up|refund\w*|money back|the end of|called (?:it )?off|called it quits|"
    r"divorc\w*|moved out|(?:moved|switched|changed|relocated) (?:[\w']+ ){0,4}?from|"
    r"(?:moved|switched|got) off|retired|"
    r"left (?:the|my|our|his|her) (?:job|company|firm|band|team|club|city|country|school|"
    r"uni|university|church|gym|group|[\w-]+(?=,| and | for | to |\s*$))|"
    r"handed in|traded (?:in|away)|got rid of|gave (?:\w+ ){0,3}away|donated|dropped out|"
    r"last day|deleted|shut down|said goodbye|goodbye to|tapered off|replaced|"
    r"ohne|nicht mehr|kein\w* mehr|verkauft|gekündigt|gestorben|vorbei|Schluss gemacht|"
    r"\w*erstattet|getrennt|geschieden|ausgezogen|aufgegeben|aufgehört|abgeschafft|"
    r"abgemeldet|weggegeben|verschenkt|gewechselt|in Rente|"
    r"sans|plus de|ne \w+ plus|vendu|annulé\w*|mort\w*|fini|rembours\w*|rompu|"
    r"séparé\w*|quitté\w*|arrêté|abandonné\w*|lâché|résilié\w*|à la casse|parti\w*|"
    r"à la retraite|"
    r"sin|ya no|vend[íi]\w*|cancel[ée]\w*|muri[óo]|se acabó|reembols\w*|devolvieron|"
    r"lo dejamos|nos separamos|separad[oa]s?|dej[ée]|renunci[ée]|me deshice|di de baja|"
    r"se jubiló|jubilad[oa]|"
    r"senza|non più|vendut\w*|disdett\w*|mort\w*|finit\w*|rimbors\w*|ci siamo lasciati|"
    r"separat[ioe]|lasciat[oa]|smesso|mollat[oa]|licenziat[oa]|in pensione|"
    r"sem|já não|vendi\w*|cancelei|morreu|acabou|terminamos|larguei|deixei|parei|"
    r"pedi demissão|desativei|aposentou|aposentad[oa])\b", _FLAGS)
"""Words that end a state: a later mention of its names with one of them is a change."""
_WEAK_ENDS = regex.compile(r"^(?:without|lost|gone|quit|ohne|sans|fini|sin|senza|sem)$",
                           _FLAGS)
"""End words that as often say something else ("without falling asleep", "we lost 2-1",
"quit taking mum to the big tesco"): they end only the word next to them. "Left" ends
nothing alone ("left my pixel at home", "the only one left in austin")."""
_ASKS = regex.compile(
    r"^(?:¿|(?:what|whats|what's|how|why|where|when|which|who|can|could|is|are|do|does|did|"
    r"should|any|recommend|explain|tell me|give me|help me|show me|write|translate|"
    r"summari[sz]e|define|wie|was|wo|wann|warum|welche\w*|kannst|kann|gibt es|comment|"
    r"quel\w*|combien|où|pourquoi|est-ce|c'est quoi|cómo|qué|cuánt\w*|cuál\w*|"
    r"dónde|por qué|come si|quant\w*|qual\w*|dove|perché|onde|por que)\b)|\?\s*$",
    _FLAGS)
"""A question or a request: it states nothing of the one asking."""


STEM = 5
"""Letters of a word compared when a state goes on: "keeping Mondays" keeps "Monday"."""


@dataclass(frozen=True, slots=True)
class Stance:
    """What a statement is about and how it is said."""

    parties: frozenset[str]
    """Whom the statements open on, other than the speaker (`lemma` of "my sister": "sister").
    """
    own: bool
    """It opens on the speaker: "my sister moved to Boise, gonna miss her" is the sister's
    news, whatever the speaker adds about it."""
    present: bool
    """Said as how things are, not as a wish, a weighed choice, a memory or a stay away."""
    goes_on: frozenset[str]
    """The words (their first `STEM` letters) of clauses saying a state goes on ("still
    in Leith")."""
    names: frozenset[str]
    """The names and numbers it says inside its sentences (lowercased)."""
    capitals: frozenset[str]
    """Its capitalised words and numbers wherever they stand (lowercased)."""
    ends: bool
    """It says something ended ("without Luna", "sold the Vespa")."""
    opens_on: str | None = None
    """The name its first statement opens on when it speaks of a "he" or "she" and not of
    the speaker ("Priya finally moved out of Denver, she got a place in Austin"),
    lowercased: someone else's news, unless the older statement named them (a pet)."""
    moves_on: frozenset[str] = frozenset()
    """The words of its other clauses (their first `STEM` letters): "still baking every
    weekend, but the running is done" goes on about baking and not about running."""
    disowns: bool = False
    """The speaker says what is told is not theirs ("the golden retriever isn't mine", "I'm
    not the one moving", "c'est ma voisine qui l'a pris, pas moi"), and ends nothing."""
    aside: bool = False
    """Told as a memory of long ago or a stay that ends ("when I was a kid we lived in
    Anchorage", "at my in-laws' for the month"): how things were or are for a while, not
    how they are now."""
    any_own: bool = False
    """Some statement opens on the speaker ("my mom fell for Winnie, she lives with her now.
    down to 2 cats"): news of the speaker's own, wherever in it."""
    states: bool = False
    """It states something: a memory in which the person only asks ("how long is the
    train to Prague?") tells no fact of anyone."""
    negated: frozenset[str] = frozenset()
    """The names it says with a negation before them ("pas de Grèce"), lowercased."""


def stance(text: str, *, others: Collection[str] = ()) -> Stance:
    """The stance of `text`, a memory's lines ("user: ..."): the lines of the speakers in
    `others` (the assistant) are not the person's own words and are left out."""
    return _stance(text, frozenset(s.lower() for s in others))


@lru_cache(maxsize=4096)
def _stance(text: str, others: frozenset[str]) -> Stance:
    lines = [said for who, said in _LINE.findall(text) if who.lower() not in others] \
        if _LINE.search(text) else [text]
    parties: set[str] = set()
    own, present, goes_on, other, opens_on, disowns = None, True, set(), set(), None, False
    aside = any_own = False
    for line in lines:
        for sentence in filter(None, (s.strip() for s in _SENTENCE.split(line))):
            if own is None:  # how the first sentences put it: "what if", "next week"
                now = _without_hindsight(sentence)
                if _says(_LONG_AGO, now) or _says(_AWAY, now) or \
                        _says(_STAY, _CLAUSE.split(sentence, 1)[0]):
                    present, aside = False, True
                if _says(_WEIGHED, now) or _ahead(sentence):
                    present = False
            if _ASKS.search(sentence):  # a request may go on to state of someone: "can
                rest = _PARTS.split(sentence, 1)[1:]  # you update it, I got a new number"
                if not rest or _ASKS.search(rest[0]) or not (
                        _ME.search(rest[0]) or _party(rest[0])):
                    continue
                sentence = rest[0]
            # "isn't mine" tells someone else's news; "not mine anymore", a change
            disowns = disowns or _says(_DISOWNS, sentence) and not (
                _says(_ENDS, sentence) or _ANYMORE.search(sentence))
            party = _party(sentence)
            if own is None and party is None:
                opens_on = _named(sentence, lines)
            if own is None:  # the first statement says whose news it is
                own = party is None or bool(_WE.search(text)) or \
                    bool(_ON_ME.search(_CLAUSE.split(sentence, 1)[0]))
            any_own = any_own or party is None and _states(sentence) or \
                bool(_WE.search(sentence))
            if party is not None and party not in _UNNAMED:
                parties.add(party)
            for clause in _PARTS.split(sentence):
                stems = {w[:STEM] for w in terms(clause)}
                (goes_on if _says(_GOES_ON, clause) else other).update(stems)
    said = _GROUNDED.sub("", " ".join(lines))
    names, capitals = (frozenset(n.lower().strip(".,:") for n in pattern.findall(said)
                                 if not _I.match(n)) for pattern in (_NAME, _CAPITAL))
    return Stance(frozenset(parties), bool(own), present, frozenset(goes_on), names,
                  capitals, _says(_ENDS, said), opens_on, frozenset(other), disowns, aside,
                  any_own, own is not None,
                  frozenset(n.lower() for n in _NEGATED.findall(said)))


def theirs(new: Stance, old: Stance) -> bool:
    """Whether a newer statement is someone else's news beside an older one: the speaker
    disowns it ("isn't mine"), or it opens on a name the older one does not say ("Priya
    finally moved out of Denver, she ..." after "I live in Denver")."""
    return new.disowns or new.opens_on is not None and new.opens_on not in old.capitals


def _states(sentence: str) -> bool:
    """Whether a sentence that opens on no one else can tell the speaker's news: it names
    them or has three words or more ("down to 2 cats"; not "Mutig!", "so proud")."""
    return bool(_ME.search(sentence)) or len(sentence.split()) >= 3


def _without_hindsight(sentence: str) -> str:
    """A sentence without its clauses of hindsight when it has others ("the Kobo lets me
    borrow library books, wish I'd ditched the kindle years ago"): how it puts the present."""
    clauses = _PARTS.split(sentence)
    return " ".join([c for c in clauses if not _HINDSIGHT.search(c)] or clauses)


def _ahead(sentence: str) -> bool:
    """Whether a sentence speaks of a time ahead ("interview next thursday"): a plan."""
    found = find_relative(_GROUNDED.sub("", sentence))
    return found is not None and ahead(found)


def _says(words: regex.Pattern, text: str) -> bool:
    """Whether `text` says one of `words`, in any case but as capitals ("gave up on IF":
    intermittent fasting, no condition)."""
    return any(not (found[0].isupper() and len(found[0]) > 1) for found in words.finditer(text))


def speaks_of_self(text: str) -> bool:
    """Whether `text` says "I", "my", "we" or the like in one of the six languages."""
    return bool(_ME.search(text))


def weighs(sentence: str) -> bool:
    """Whether a sentence weighs a choice, wishes, supposes or speaks of a time ahead ("I'm
    thinking of taking it", "interview next thursday"): nothing it says has happened."""
    return _says(_WEIGHED, _without_hindsight(sentence)) or _ahead(sentence)


def role(word: str) -> bool:
    """Whether a word names someone by their role to the speaker ("mum", "Chefin", "voisin"):
    whom a fact is about, never the value it states."""
    return bool(_ROLE_WORD.fullmatch(word))


_ROLE_WORD = regex.compile(_ROLE, _FLAGS)


def asks(text: str) -> bool:
    """Whether a sentence or clause asks or requests rather than states."""
    return bool(_ASKS.search(text))


def ends_near(clause: str, near: Callable[[str], bool], reach: int = 3) -> bool:
    """Whether `clause` says something ended of a word `near` accepts: one of `_ENDS` within
    `_FAR` words of it, or, for a word that as often says something else (`_WEAK_ENDS`: "we
    lost 2-1"), within `reach` words; "without" and its kin (`_BEFORE`) end only what
    follows them ("the lab was without power" ends the power, not the lab)."""
    words = [(m.start(), m.group()) for m in _WORD.finditer(clause)]
    named = [i for i, (_, w) in enumerate(words) if any(map(near, terms(w)))]
    if not named:
        return False
    for found in _ENDS.finditer(clause):
        if found[0].isupper() and len(found[0]) > 1:
            continue  # capitals name something: "IF" is intermittent fasting
        if _MEANT.search(clause, 0, found.start()) or _GONE_AS.match(clause, found.start()):
            continue
        at = sum(1 for start, _ in words if start < found.start())
        far = reach if _WEAK_ENDS.match(found[0]) else _FAR
        if any(0 < i - at <= far if _BEFORE.match(found[0]) else abs(at - i) <= far
               for i in named):
            return True
    return False


_FAR = 8
"""Words between an end word and what it ends, at most: in a long sentence ("my partner
is at the flat in glasgow sending photos of the cat like she's replaced me") one far off
speaks of something else."""
_BEFORE = regex.compile(r"^(?:without|ohne|sans|sin|senza|sem)$", regex.IGNORECASE)
"""End words that end only what follows them."""
_MEANT = regex.compile(
    r"\b(?:want|wants|wanted|wanna|need|needs|try|trying|tried|going to|gonna|plan\w*|"
    r"hop(?:e|es|ing)|afraid|might|may|should|could|would|will|won't|can't|don't|didn't|"
    r"never|not|möchte|will|wollte|muss|sollte|könnte|nie|veux|voudrais|vais|dois|"
    r"pourrais|jamais|quiero|quería|voy a|debo|podría|nunca|voglio|vorrei|devo|potrei|mai|"
    r"quero|queria|vou|poderia)(?: to| de| a)?\s+(?:\w+\s+)?$", _FLAGS)
"""Words just before an end word that make it a wish, a plan, a fear or a denial ("I don't
want to quit the degree", "ich will aufhören", "never sold it"): nothing ended."""
_GONE_AS = regex.compile(r"gone\s+(?!for\b|now\b|from\b|since\b|forever\b|already\b)"
                         r"[\p{L}]", _FLAGS)
""""Gone" saying how something turned ("my asthma's gone mental", "gone quiet"), not that it
went."""
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}][\p{L}\p{M}\p{N}'’-]*")


def parties(question: str) -> frozenset[str]:
    """Whom a question asks about when not the one asking ("where does my sister live?"):
    the roles it names after an owner ("my", "mi", "ma", "meine": no article, so "the baby
    shower" asks about no baby); none for the asker."""
    return frozenset(lemma(found.group(1)) for found in regex.finditer(
        rf"\b(?:{_OWNER})\s+(?:[\w'-]+\s+){{0,2}}?({_ROLE})\b", question, _FLAGS))


def lemma(role: str) -> str:
    """One form for a role's genders and numbers: "jefe" and "jefa", "Chef" and "Chefin",
    "friend" and "friends" are read as one."""
    role = role.lower()
    if len(role) > 5 and role.endswith("in"):
        role = role[:-2]
    for end in "s", "aeo":
        if len(role) > 3 and role[-1] in end:
            role = role[:-1]
    return role


_UNNAMED = frozenset(map(lemma, _PRONOUNS))


_ME = regex.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|we|we're|us|our|ich|mich|mir|mein\w*|wir|uns|"
    r"unser\w*|je|j'|moi|mon|ma|mes|nous|notre|nos|yo|mi|mis|nosotr[oa]s|nuestr[oa]s?|io|"
    r"mio|mia|miei|mie|noi|nostr[oaie]|eu|meu|minha|meus|minhas|nós|noss[oa]s?)\b", _FLAGS)
"""The speaker's own words: I, my, we, in the six languages."""
_SHE = regex.compile(r"\b(?:he|him|she|her|er|ihn|ihm|elle|lui|él|ella|lei|ele|ela)\b",
                     regex.IGNORECASE)
"""A person spoken of: he, she, him, her."""
_PARTS = regex.compile(r"[,;:]\s|\s(?:but|aber|mais|pero|ma|mas)\s", regex.IGNORECASE)
"""Where a sentence's clauses part: "still baking, but the running is done"."""
_CLAUSE = regex.compile(r"[,;:()]|\s[-–—]\s")
"""Where a first clause ends, for whom it speaks of: "Priya moved :( she ..."."""
_FIRST = regex.compile(rf"^(?i:{_OPENER[1:]})(\p{{Lu}}[\p{{Ll}}'’-]+)\b", regex.VERSION1)
"""A sentence's first capitalised word after the words a chat message opens with."""
_LANGUAGES = ("en", "german", "french", "spanish", "italian", "portuguese")


def _named(sentence: str, lines: list[str]) -> str | None:
    """The person a statement opens on by name ("Priya finally moved out of Denver, she got
    a place in Austin"): a capitalised first word, no stop word or "-ly" adverb ("Finally"),
    in a first clause with no "I" or "my", when the statement speaks of a "he" or "she"."""
    found = _FIRST.match(sentence)
    if found is None or _ME.search(_CLAUSE.split(sentence, 1)[0]) or \
            found[1].lower() in stop_words(*_LANGUAGES) or found[1].endswith("ly") or \
            not any(_SHE.search(line) for line in lines):
        return None
    return found[1].lower()


def _party(sentence: str) -> str | None:
    found = _THIRD.match(sentence)
    if found is None or found.group("role").lower() == "il" and _italian(sentence):
        return None  # "il tizio che ha comprato la mia Vespa": an article, not "he"
    return lemma(found.group("role"))


def _italian(sentence: str) -> bool:
    """Whether a sentence has more of Italian's own stop words than of French's."""
    italian, french = _own_stop_words()
    said = terms(sentence)
    return sum(w in italian for w in said) > sum(w in french for w in said)


@lru_cache(maxsize=1)
def _own_stop_words() -> tuple[frozenset[str], frozenset[str]]:
    """The stop words of Italian that French lacks, and those of French that Italian lacks."""
    italian, french = stop_words("italian"), stop_words("french")
    return italian - french, french - italian
