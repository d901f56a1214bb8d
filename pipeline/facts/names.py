"""Entity mentions: cleaning a noun phrase into a name, its resolution key, and what is not an entity.

Bare head nouns ("the system", "the cutover") are not entities unless something pins their
referent; the document's topic (read from its title) is what pins a bare subject of a dated
statement ("The cutover is on June 15" in the billing migration notes is about the billing
migration).
"""

from __future__ import annotations

import re
import unicodedata

DETERMINERS = frozenset({"the", "a", "an", "our", "their", "his", "her", "its", "this", "that", "these",
                         "those", "my", "your"})
# Adjectives that do not pin a referent: "the new system" is still just "the system".
GENERIC_MODIFIERS = frozenset({"new", "old", "first", "current", "whole", "final", "next", "last",
                               "same", "other", "entire", "main", "overall"})
PRONOUNS = frozenset({"he", "she", "they", "it", "we", "i", "you", "this", "that", "these", "those",
                      "someone", "everyone", "nobody", "there", "one"})
# Words that name the kind of document, not what it is about.
_GENRE = frozenset({"kickoff", "kick-off", "stand-up", "standup", "notes", "note", "review", "retrospective",
                    "retro", "weekly", "specification", "spec", "plan", "planning", "meeting", "minutes",
                    "sync", "update", "status", "report", "roster", "summary", "agenda", "memo", "log",
                    "transcript", "slides", "deck", "draft", "doc", "document"})
_DATE_WORDS = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}\s+[A-Z][a-z]+\s+\d{4}|[A-Z][a-z]+\s+\d{1,2},?\s+\d{4}|"
    r"[A-Z][a-z]+\s+\d{4}|\d{4}|—|–)\b")
_SPACE = re.compile(r"\s+")
_KEY_DROP = re.compile(r"[^\w\s&+-]")


def clean(phrase: str) -> str:
    """A mention as a name: determiners off the front, punctuation off the ends, one space."""
    words = _SPACE.sub(" ", phrase.strip(" \t\n.,;:!?\"'()[]-–—")).split(" ")
    while len(words) > 1 and words[0].lower() in DETERMINERS:
        words = words[1:]
    name = " ".join(words)
    if name.endswith("'s") or name.endswith("’s"):
        name = name[:-2]
    return name.strip()


def key(name: str) -> str:
    """The resolution key: case-folded, accents and punctuation off, one space."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    return _SPACE.sub(" ", _KEY_DROP.sub(" ", text)).strip()


def is_pronoun(phrase: str) -> bool:
    return key(phrase) in PRONOUNS


def is_bare_head(phrase: str) -> bool:
    """A single lower-case common noun once determiners and generic adjectives are gone."""
    words = [w for w in _SPACE.split(phrase.strip()) if w]
    while words and words[0].lower() in DETERMINERS | GENERIC_MODIFIERS:
        words = words[1:]
    return len(words) == 1 and words[0][:1].islower()


def is_entity(phrase: str) -> bool:
    """Could this noun phrase name an entity at all (not a pronoun, not a bare head noun)?"""
    name = clean(phrase)
    return bool(name) and not is_pronoun(name) and not is_bare_head(phrase) and any(ch.isalpha() for ch in name)


_CAPITALISED_RUN = re.compile(r"(?<![\w'’])[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)*")
# Words that open a question or a sentence capitalised, never as a name.
_OPENERS = frozenset({"when", "what", "who", "whom", "whose", "where", "why", "how", "which", "did", "do", "does",
                      "is", "are", "was", "were", "has", "have", "had", "can", "could", "would", "will", "should",
                      "in", "on", "at", "after", "before", "during", "since", "according", "tell", "list", "name"})


def named_in(question: str) -> list[str]:
    """The names a question uses: runs of capitalised words, possessives off, without a question
    word that opens the sentence ("When did Melanie paint a sunrise?" → ["Melanie"])."""
    found = []
    for match in _CAPITALISED_RUN.finditer(question):
        words = match.group(0).split()
        if match.start() == len(question) - len(question.lstrip()) and words[0].lower() in _OPENERS:
            words = words[1:]
        name = clean(" ".join(words))
        if name and is_entity(name) and name not in found:
            found.append(name)
    return found


def first_line(text: str | None) -> str | None:
    """A document's first line of text: its title or first heading, markup and comments off."""
    for line in (text or "").splitlines():
        line = line.strip().lstrip("#").strip()
        if line and not line.startswith("<!--"):
            return line
    return None


def topic_from_title(title: str | None) -> str | None:
    """What a document is about, from its title: "Billing migration: cutover specification" and
    "Billing migration stand-up notes, 20 May 2026" are both about "Billing migration"."""
    if not title:
        return None
    head = title.split(":", 1)[0]
    head = _DATE_WORDS.sub(" ", head).replace(",", " ")
    words = [w for w in _SPACE.split(head.strip()) if w]
    while words and words[-1].lower() in _GENRE:
        words.pop()
    while words and words[0].lower() in DETERMINERS:
        words = words[1:]
    topic = " ".join(words).strip(" -")
    if not topic or not is_entity(topic) or len(words) > 6:
        return None
    if len(words) > 1 and all(w[:1].islower() for w in words[1:]) and not words[0][1:2].isupper():
        topic = topic[:1].lower() + topic[1:]  # a sentence-case title: "Billing migration" is a common noun phrase
    return topic


# --- what may name an entity ---------------------------------------------------------------------
# An entity is a named thing (a person, organisation, product, place, project, work, event), never
# an imperative ("Use"), a function word ("If …"), a clause ("They keep Melanie motivated"), a flag,
# an identifier or markup. Sentence-initial capitals prove nothing, so a name must show it is one:
# the document writes one of its words capitalised mid-sentence, or the word carries a capital or a
# digit inside it ("TypeScript", "Mem0", "API").

FUNCTION_WORDS = frozenset("""
a an the if unless when whenever while because although though to any what how why where which whether
as so and or but then also only just even each every all some many more most no not both either neither
for from with without by of in on at into onto via per this that these those there here it its they we
you your our my their his her i me us them between before after during instead now once still yet
however otherwise than like such other another same own few several much less very too please let
since until till unlike maybe perhaps hopefully
""".split())
NUMBER_WORDS = frozenset("""one two three four five six seven eight nine ten eleven twelve twenty thirty forty
fifty hundred thousand million first second third once twice""".split())
# Verbs that open an instruction in documentation ("Configure the webhook", "Enable Graph Memory"):
# as a name's first word they show the run is a sentence, not a name.
INSTRUCTION_VERBS = frozenset("""
add apply ask avoid build call change check choose click clone combine compare configure connect copy create
define delete deploy disable download edit enable ensure explore export extend fetch filter find follow get go
handle implement import include initialize initialise inspect install learn limit list load log merge migrate
modify monitor navigate open pass paste pick pin print provide pull push put read reduce register remove
replace restart retrieve return review run save search see select send set sign skip specify start stop store
switch test track try tune turn update upgrade upload use validate verify visit wrap write keep make note
take give let tell show leave mark treat think consider refer bring fill grant revoke rotate generate type
enter press wait split join sort group count assign attach scope tag override adjust customize customise
browse confirm increase point drop steer
""".split())
_FINITE = frozenset("""is are was were be been being has have had do does did can could will would should
may might must shall isn't aren't wasn't weren't doesn't don't didn't can't won't""".split())
# Words that may stand lower-case inside a name ("Bank of America", "Tour de France").
_CONNECTORS = frozenset({"of", "and", "&", "de", "du", "da", "la", "le", "von", "van", "der", "the", "for", "on",
                         "in", "y", "e", "di", "del"})
_NAME_MARKUP = re.compile(r"[`<>{}\[\]()$=|\\#@*~^\":/]|\w[_.]\w")
_MID_SENTENCE_CAPITAL = re.compile(r"(?<=[a-z)] )[A-Z][\w'’&.-]*(?:\s+[A-Z][\w'’&.-]*)*")


def document_names(texts: list[str]) -> frozenset[str]:
    """Words a document writes capitalised after a lower-case word (each word of such a run): the
    words it uses as names."""
    return frozenset(word.rstrip(".'’").removesuffix("'s").removesuffix("’s")
                     for text in texts for m in _MID_SENTENCE_CAPITAL.finditer(text) for word in m.group().split())


_CAPITALISED_WORD = re.compile(r"(?<![\w'’])[A-Z][\w'’&-]*")


def proper_words(texts: list[str]) -> frozenset[str]:
    """The capitalised words a document treats as names: those it writes capitalised mid-sentence
    (`document_names`), and those it never writes in lower case that are no function word,
    pronoun or instruction ("Priya owns the tax codes" keeps Priya; "The class" does not)."""
    common = common_words(texts)
    return document_names(texts) | frozenset(
        w for text in texts for w in _CAPITALISED_WORD.findall(text)
        if w.lower() not in common and w.lower() not in FUNCTION_WORDS | PRONOUNS | INSTRUCTION_VERBS | NUMBER_WORDS)


def _marked(word: str) -> bool:
    """A capital or a digit inside the word: "TypeScript", "Mem0", "API", "iPhone"."""
    return any(ch.isdigit() or ch.isupper() for ch in word[1:]) or (word[:1].islower() and any(ch.isupper() for ch in word))


def is_name(name: str, known: frozenset[str], common: frozenset[str] = frozenset(),
            speakers: frozenset[str] = frozenset()) -> bool:
    """Whether `name` (a cleaned mention) may name an entity, given the words the document uses
    as names (`document_names`), the words it also writes in lower case (`common`: "Configure",
    "Privacy" are words, not names) and who speaks in it."""
    if name in speakers:
        return True
    words = name.split()
    if not words or len(words) > 6 or name.startswith("-") or _NAME_MARKUP.search(name):
        return False
    if not any(ch.isalpha() for ch in name) or all(w.lower() in _CALENDAR for w in words) or name[0].isdigit():
        return False  # a number, a quantity ("10M", "200-400ms") or a date is a value, not a name
    lowered = [w.lower().strip(",.;:!?") for w in words]
    if lowered[0] in FUNCTION_WORDS or lowered[0] in PRONOUNS or lowered[0] in _CONNECTORS \
            or lowered[0] in INSTRUCTION_VERBS:
        return False
    if len(words) == 1 and lowered[0].endswith(("ly", "ed", "ing")) and not _marked(words[0]):
        return False  # "Seamlessly", "Created", "Passing": an adverb or a verb form, not a name
    if any(w in _FINITE for w in lowered) or lowered[-1] in FUNCTION_WORDS:
        return False
    content = [w for w, low in zip(words, lowered) if low not in _CONNECTORS]
    if any(not (w[:1].isupper() or w[:1].isdigit() or _marked(w)) for w in content):
        return False
    if all(w.lower() in common or w.lower().rstrip("s") in common for w in content if not _marked(w)) \
            and not all(_marked(w) for w in content):
        return False
    if name in known:
        return True
    # the first word carries the proof ("Uses OpenAI" or "Consistent Chronology" opened a sentence),
    # or the words are ones the document never writes in lower case ("Ravi", "Dana Kim", "Door Dash")
    return content[0] in known or _marked(content[0]) or not any(w.lower() in common for w in content)


def is_thing(phrase: str) -> bool:
    """A lower-case noun phrase a relation names as its end ("data validation", "the schema change"
    once cleaned): at most five plain words, opening on no function word or pronoun, ending on no
    function word, holding no verb the rules know. Its first word may look like an instruction: the
    relation's own verb came before it ("the search team")."""
    words = phrase.split()
    if not 1 <= len(words) <= 5 or not phrase[:1].islower() or _NAME_MARKUP.search(phrase):
        return False
    if not all(re.fullmatch(r"[a-z0-9][a-z0-9'’-]*", w) for w in words):
        return False
    first, last = words[0], words[-1]
    return not (first in FUNCTION_WORDS or first in PRONOUNS or last in FUNCTION_WORDS
                or last.endswith("ly") or any(w in _FINITE for w in words))


def known_names(texts: list[str], speakers: frozenset[str] = frozenset()) -> tuple[frozenset[str], frozenset[str]]:
    """(the words a document uses as names, the words it writes in lower case): `document_names`,
    the speakers, and every word of a longer name it uses ("Dana Kim" makes a lone "Dana" a name)."""
    known, common = document_names(texts) | speakers, common_words(texts)
    longer = {w for text in texts for name in names_in(text, known, common, speakers) if " " in name
              for w in name.split() if w.lower() not in _CONNECTORS}
    return known | longer, common


_PARTICIPANTS_LINE = re.compile(r"^\W*(?:participants|attendees|present)\W*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_SPEAKER_LINE = re.compile(r"^(?:\[[^\]\n]*\]\s*)?\**([A-Z][\w'’-]+(?: [A-Z][\w'’-]+)?)\**:\**\s", re.MULTILINE)


def speakers_in(opening: str | None) -> frozenset[str]:
    """Who speaks in a document, from its opening: a "Participants:" line, and the names that open
    its turns ("[D1:3 | …] Maria: …")."""
    text = opening or ""
    found = {n.strip() for line in _PARTICIPANTS_LINE.findall(text) for n in re.split(r",|\band\b|;", line)}
    found |= set(_SPEAKER_LINE.findall(text))
    return frozenset(n for n in found if n)


_NAME_RUN = re.compile(r"(?<![\w'’])[A-Z0-9][\w'’&.-]*(?:\s+(?:(?:of|de|du|von|van|the)\s+){0,2}[A-Z][\w'’&.-]*){0,4}")
_CALENDAR = frozenset("""january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun monday tuesday wednesday thursday friday saturday sunday
today tomorrow yesterday""".split())
_LOWER_WORD = re.compile(r"(?<![\w'’])[a-z][a-z'’-]*")


def common_words(texts: list[str]) -> frozenset[str]:
    """The words a document writes in lower case."""
    return frozenset(w for text in texts for w in _LOWER_WORD.findall(text))


def names_in(text: str, known: frozenset[str], common: frozenset[str] = frozenset(),
             speakers: frozenset[str] = frozenset()) -> list[str]:
    """The names a text uses, in order, each once: runs of capitalised words that `is_name` accepts
    ("John's colleague Rob" → John, Rob); a run that is no name is tried without its first word
    ("Thanks Maria" → Maria)."""
    found: list[str] = []
    runs = []
    for match in _NAME_RUN.finditer(text):
        words = match.group().rstrip(".,;:!?").split()
        # two speakers side by side ("tell Maria John started") are two names
        if len(words) > 1 and sum(w in speakers for w in words) > 1:
            runs += [[w] for w in words]
        else:
            runs.append(words)
    for words in runs:
        while words:
            name = clean(" ".join(words))
            if is_name(name, known, common, speakers):
                if name not in found:
                    found.append(name)
                break
            words = words[1:]
    return found
