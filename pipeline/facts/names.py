"""Entity mentions: cleaning a noun phrase into a name, its resolution key, and what is not an entity.

Bare head nouns ("the system", "the cutover") are not entities unless something pins their
referent; the document's topic (read from its title) is what pins a bare subject of a dated
statement ("The cutover is on June 15" in the billing migration notes is about the billing
migration).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

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
    while words and words[0].lower() in _LEADING_MODIFIERS:
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
    if not topic or not is_entity(topic) or len(words) > 6 or any(w.isdigit() for w in words):
        return None  # "Conversation 41, session 3" numbers a document; it names nothing it is about
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
for from with without by of in on at into onto via per about around across through toward towards upon within this that these those there here it its they we
you your our my their his her i me us them between before after during instead now once still yet
however otherwise than like such other another same own few several much less very too please let
since until till unlike maybe perhaps hopefully itself themselves himself herself myself yourself ourselves
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
# The unions the rules test words against, made once (a union written inside a loop is made again
# for every word).
_LEADING_MODIFIERS = DETERMINERS | GENERIC_MODIFIERS
_NOT_PROPER = FUNCTION_WORDS | PRONOUNS | INSTRUCTION_VERBS | NUMBER_WORDS
_FINITE = frozenset("""is are was were be been being has have had do does did can could will would should
may might must shall isn't aren't wasn't weren't doesn't don't didn't can't won't""".split())
# Words that may stand lower-case inside a name ("Bank of America", "Tour de France").
CONNECTORS = frozenset({"of", "and", "&", "de", "du", "da", "la", "le", "von", "van", "der", "the", "for", "on",
                        "in", "y", "e", "di", "del"})
_NAME_MARKUP = re.compile(r"[`<>{}\[\]()$=|\\#@*~^\":/]|\w[_.]\w")
# A word of a name: a dot only inside it ("Node.js"), never one that ends a sentence.
_NAME_WORD = r"[\w'’&-]*(?:\.[\w'’&-]+)*"
# A run of capitalised words after a word in lower case, a determiner, a bracket or a comma, behind
# any emphasis or quotation marks: "moved to San Francisco", "The Tessaly launch", "for example
# *Alice*, *San Francisco*". Not after another capitalised word: in "Seamless Integration:" the
# second word is a label's, not a name.
_OPENING_DETERMINER = "|".join(sorted(w.capitalize() for w in DETERMINERS))
_MID_SENTENCE_CAPITAL = re.compile(rf"(?:(?<![\w'’])(?:[a-z][\w'’-]*|{_OPENING_DETERMINER})|[),]) [*_\"“‘]*"
                                   rf"([A-Z]{_NAME_WORD}(?:[ \t]+[A-Z]{_NAME_WORD})*)")


def document_names(texts: list[str], *, english_twice: bool = False) -> frozenset[str]:
    """Words a document writes capitalised mid-sentence (`_MID_SENTENCE_CAPITAL`; each word of such
    a run, and the run itself): the words it uses as names. With `english_twice`, an English word counts only when the document
    writes it so twice: one "the Process" in a list of links is a heading's word, not a name."""
    runs = [m.group(1) for text in texts for m in _MID_SENTENCE_CAPITAL.finditer(text)]
    found = Counter(word.rstrip(".'’").removesuffix("'s").removesuffix("’s") for run in runs for word in run.split())
    whole = {clean(run) for run in runs if " " in run.strip()}   # "San Francisco" is known as itself
    return frozenset(w for w, n in found.items() if not english_twice or n >= 2 or not is_english_word(w)) | whole


_CAPITALISED_WORD = re.compile(r"(?<![\w'’])[A-Z][\w'’&-]*")


def proper_words(texts: list[str]) -> frozenset[str]:
    """The capitalised words a document treats as names: those it writes capitalised mid-sentence
    (`document_names`), and those it never writes in lower case that are no function word,
    pronoun or instruction ("Priya owns the tax codes" keeps Priya; "The class" does not)."""
    common = common_words(texts)
    return document_names(texts) | frozenset(
        w for text in texts for w in _CAPITALISED_WORD.findall(text)
        if w.lower() not in common and w.lower() not in _NOT_PROPER)


@functools.cache
def english_words() -> frozenset[str]:
    """English words in lower case, from the `english-words` package: those Webster's Second
    writes in lower case ("prepare", "feedback", "low"), and the newer words of GCIDE ("automate",
    "database") that Webster's does not list as a proper name. Never "Ravi" or "John"."""
    from english_words import get_english_words_set

    webster = get_english_words_set(["web2"], alpha=True)
    proper = {w.lower() for w in webster if w[:1].isupper()}
    newer = get_english_words_set(["gcide"], alpha=True, lower=True) - proper
    return frozenset({w for w in webster if w[:1].islower()} | newer)


# The share of people the given names cover, most common first: beyond it the census lists rare
# spellings that are mostly ordinary words ("Young", "Soon", "Precious").
GIVEN_NAMES_COVER = 85.0


@functools.cache
def given_names() -> frozenset[str]:
    """Common given names, lower-cased, from the 1990 US census lists the `names` package ships
    (those covering `GIVEN_NAMES_COVER` % of people), without function words, instructions and
    names of two letters: "marco", "maria", "grace"."""
    import names as census

    found = set()
    for kind in ("first:male", "first:female"):
        with open(census.FILES[kind], encoding="ascii") as listing:
            for line in listing:
                name, _, cumulative, _ = line.split()
                if float(cumulative) <= GIVEN_NAMES_COVER:
                    found.add(name.lower())
    return frozenset(n for n in found if len(n) > 2 and n not in FUNCTION_WORDS | INSTRUCTION_VERBS | PRONOUNS)


def is_english_word(word: str) -> bool:
    """Whether the dictionary holds the word in lower case, or its stem: "Prepares", "Tailors",
    "Deployments", "Filtered", "Logging" are words; "Ravi" is not, nor a common given name the
    dictionary also lists ("Marco", "Grace"). A hyphenated word is one when each part is
    ("Zero-latency", "Long-term")."""
    lowered = word.lower().replace("’", "'").removesuffix("'s")
    if lowered in given_names():
        return False
    return all(any(stem in english_words() for stem in _stems(p)) for p in lowered.split("-") if p)


def _stems(word: str) -> list[str]:
    """The word and what an English suffix may have been added to: -s, -es, -ies, -ed, -ing, -er, -ment, -ly."""
    stems = [word]
    for suffix, back in (("ies", "y"), ("es", ""), ("s", ""), ("ied", "y"), ("ed", ""), ("ed", "e"), ("ing", ""),
                         ("ing", "e"), ("ments", ""), ("ment", ""), ("ers", ""), ("er", ""), ("ly", ""), ("est", ""),
                         ("iest", "y"), ("ation", "e"),
                         ("ations", "e"), ("ization", "ize"), ("izations", "ize"), ("ality", "al")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stems.append(word[:-len(suffix)] + back)
    if len(word) > 4 and word[-1] == word[-2] == word[-3]:
        stems.append(word[:-1])
    for stem in list(stems[1:]):
        if len(stem) > 3 and stem[-1] == stem[-2]:
            stems.append(stem[:-1])  # "logging" → "logg" → "log"
    return stems


# Prefixes English makes verbs and nouns of words with ("uncomment", "deduplicate", "rerun").
_PREFIXES = ("un", "de", "re", "pre", "dis", "mis", "non", "sub", "co")


@functools.lru_cache(maxsize=1 << 14)
def is_english_compound(word: str) -> bool:
    """A word the dictionary lacks but English makes of its words: two words of four letters or
    more ("Lifecycle", "Healthcare", "Downscale"), or a prefix and a word ("Uncomment",
    "Deduplicate"); never a given name ("Carmen"). Documentation writes such words at the head of
    its cells and labels, so there a name made so ("Pinecone", "Windsurf") must show it is one
    where it opens a sentence or a cell, as "Prepares" must."""
    low = word.lower()
    if not low.isalpha() or len(low) < 7 or low in given_names():
        return False
    if any(low.startswith(p) and is_english_word(low[len(p):]) and len(low) - len(p) >= 4 for p in _PREFIXES):
        return True
    return any(is_english_word(low[:i]) and is_english_word(low[i:]) for i in range(4, len(low) - 3))


def is_compound_adjective(word: str) -> bool:
    """A hyphenated word whose last part is lower case ("HIPAA-compliant", "Thread-safe"): it
    describes a thing, it names none."""
    return "-" in word and word.rsplit("-", 1)[1][:1].islower()


def _camel(word: str) -> bool:
    """Capitals inside a word that also has lower case after its first letter: "TypeScript", "iPhone"."""
    return bool(re.search(r"[a-z][A-Z]", word))


def _marked(word: str) -> bool:
    """A capital or a digit inside the word: "TypeScript", "Mem0", "API", "iPhone"."""
    return any(ch.isdigit() or ch.isupper() for ch in word[1:]) or (word[:1].islower() and any(ch.isupper() for ch in word))


_HONORIFICS = frozenset({"dr", "mr", "mrs", "ms", "mx", "prof", "sir", "madam", "st"})
# Titles and kin words that stand before a name as part of how a text calls the person
# ("Professor Lindqvist", "Aunt Leila", "Deputy Mayor Fiona Gallagher"): English words that prove
# nothing alone, so the rest of the run must be a name.
_TITLES = _HONORIFICS | frozenset("""professor doctor councillor councilor senator judge justice mayor deputy
president governor minister chancellor captain coach officer detective sergeant inspector nurse father
sister brother pastor rabbi imam reverend aunt auntie uncle grandma grandpa cousin lady lord dame king queen
prince princess""".split())
_ABBREVIATED_TITLES = "Dr|Mr|Mrs|Ms|Mx|Prof|St"
_TITLE_DOT = re.compile(rf"\b({_ABBREVIATED_TITLES}|Jr|Sr)\.(?=\s)")
_ENDS_ON_TITLE = re.compile(rf"\b(?:{_ABBREVIATED_TITLES})\.\s+$")
# Legal forms that close a company's name ("Umbrella Corp", "Kestrel Freight Ltd", "Halvorsen &
# Reid LLP"): the words before one are the company's name, English or not.
_LEGAL_FORMS = frozenset("""corp corporation inc incorporated ltd limited llc llp plc gmbh ag sa as asa bv nv
co pty sarl srl spa oy ab aps kk""".split())
_UNIT_OR_VERSION = re.compile(r"[KMGTP]i?B|[KMG]Hz|Q[1-4]|[Vv]\d+(?:\.\d+)*|H[1-6]|ms|px|kg|km|I{2,3}|IV|VI{1,3}|IX")
# Words of talk that open a run of capitals without being part of a name.
INTERJECTIONS = frozenset("""ok okay hey hi hello yo wow woah whoa yay yeah yep yup nope oh ooh aw aww haha lol omg
mmm mm hmm oof ouch ugh phew oops yikes looky cheers thanks congrats bye""".split())


# Abbreviations of common nouns ("an AI", "open a PR", "our SLAs"): a kind of thing, never one named
# thing, however often a document writes them. A name built on one ("Vercel AI SDK") is still a name.
GENERIC_ABBREVIATIONS = frozenset("""ai ml llm nlp ui ux gui cli api url uri sdk db os id faq kpi eta todo fyi
asap qa ci cd pr sla cpu gpu ram ssd vm ide poc mvp roi tbd json yaml xml csv pdf html css jwt uuid guid sql
http https rest crud orm sso mfa otp rpc grpc sse ttl png jpg jpeg gif svg webp bmp tiff mp3 mp4 wav
tts stt asr ocr toml mdx ini env txt cta base64 utf-8 crm oss erp ip ctrl""".split())
# Words of programming prose that a page capitalises opening a line or a heading ("Async",
# "Webhooks"): kinds of things, not one named thing.
PROGRAMMING_WORDS = frozenset("""async await sync webhook webhooks callback callbacks boolean booleans null nil
lambda lambdas regex enum enums struct structs tuple tuples dict dicts endpoint endpoints middleware runtime
runtimes payload payloads namespace namespaces workflow workflows dashboard dashboards plugin plugins chatbot
chatbots backend backends frontend frontends debug uninstall reinstall put post patch get add delete
config configs metadata realtime downtime wifi""".split())
# The last hump of a CamelCase identifier that names a piece of code, not a product: "ValueError",
# "TutorAgent", "PreToolUse", "FunctionCalling", "MemoryClient". Products in CamelCase end on
# their own word ("OpenSearch", "AgentOps", "LangChain", "YouTube").
_CODE_HUMP = re.compile(r"(?<=[a-z0-9])(?:[A-Z]+)?(?:Error|Exception|Warning|Agent|Client|Config|Handler|Manager|"
                        r"Callback|Request|Response|Use|Calling|Event|Type|Schema|Options|Params|Result|Builder|"
                        r"Factory|Provider|Adapter|Wrapper|Helper|Util|Utils|Service|Tool|Tools|Start|End|Stop|Submit|Interface|"
                        r"Engine|Storage|Ref|Refs)$")
# A CamelCase identifier that opens on what a function or a flag does: "GetMemories", "EnableGraph".
_CODE_VERB_HUMP = re.compile(r"(?:Get|Set|Add|Update|Delete|Create|Enable|Disable|List|Fetch|Remove|Reset|Init|Load|"
                             r"Save|Is|Has|Use)[A-Z][a-z]")
# HTTP header names ("X-API-Key", "Content-Type"): a field of a request, not a thing.
_HEADER = re.compile(r"X-[A-Za-z][\w-]*|[A-Z][a-z]+(?:-[A-Z][a-z]+)?-(?:Type|Length|Encoding|Agent|Control|Key|Id|ID|"
                     r"Token|After|Match|Since|Modified|Limit|Remaining|Reset|Origin|Policy|Language|Disposition)")
# Credentials ("AI Studio API Key", "Access Token"), a table's summary cell ("LongMemEval Overall")
# and an aspect or a state of a product ("OpenClaw Version", "Mem0 Inactive"): a value of a named
# thing, not the thing.
_CREDENTIAL_END = frozenset({"key", "keys", "token", "tokens", "secret", "secrets", "password", "passwords"})
_CREDENTIAL_OPENER = frozenset({"api", "access", "secret", "auth", "bearer", "refresh", "private", "public"})
_ASPECT_END = frozenset({"overall", "average", "total", "mean", "median", "version", "versions", "integration",
                         "integrations", "credentials", "status", "settings", "active", "inactive", "enabled",
                         "disabled"})


# A document's claims ask about the same names again and again (97,922 calls for 1,000 generated
# notes), and the answer depends on the arguments alone, all frozen: normalize 10-15 % faster.
@functools.lru_cache(maxsize=1 << 16)
def is_name(name: str, known: frozenset[str], common: frozenset[str] = frozenset(),
            speakers: frozenset[str] = frozenset(), code: frozenset[str] = frozenset(),
            proven: frozenset[str] = frozenset(), documentation: bool = True) -> bool:
    """Whether `name` (a cleaned mention) may name an entity, given the words the document uses
    as names (`document_names`), the words it also writes in lower case (`common`: "Configure",
    "Privacy" are words, not names), who speaks in it, the identifiers it sets as code
    (`code_words`: "`AsyncMemory`" is a class, whatever its capitals say), and the phrases its
    grammar proves to be names (`proven`: the capitalised end of a relation that only names take,
    "works for Stripe"), which English words in them do not undo. Where nobody speaks, a
    `documentation` page's capitalised English words are its headings' and its features'; a
    note's, as a conversation's, are names when it writes them mid-sentence ("we fly Virgin
    Atlantic")."""
    headings = documentation and not speakers
    if name in speakers:
        return True
    if _set_as_code(name, code):
        return False
    titled = _titled(name, known, common, speakers, code, proven, documentation)
    if titled is not None:
        return titled
    if _incorporated(name):
        return True
    name = _TITLE_DOT.sub(r"\1", name)
    words = name.split()
    if not words or len(words) > 6 or name.startswith("-") or _NAME_MARKUP.search(_JS_LIBRARY.sub(r"\1", name)) \
            or "_" in name \
            or re.search(r"\.\s|,|n['’]t\b|\d\+", name):
        return False   # a sentence, a list, a contraction or a version required ("Node.js 18+")
    if any(_POSSESSIVE.search(w) for w in words[:-1]):
        return False  # "Google's Gemini", "Mem0's Python SDK": an owner and its thing, two names (`names_in`)
    if words[0].lower() in INTERJECTIONS:
        return False  # "OK", "Hey Jo", "Wow": talk, and the name after it is tried alone
    if len(words) == 1 and (re.sub(r"['’]?s$", "", name).lower() in GENERIC_ABBREVIATIONS
                            or re.fullmatch(r"[A-Z]{2,}['’]?s", name) or name.lower() in PROGRAMMING_WORDS):
        return False  # "AI", "LLMs", "JWTs", "Async": a kind of thing
    if any(_CODE_HUMP.search(w) or _CODE_VERB_HUMP.match(w) or _set_as_code(w, code) for w in words) or (
            len(words) == 1 and _HEADER.fullmatch(name)):
        return False  # "ValueError", "ADK BaseMemoryService", "GetMemories", "Retry-After": code, or a header
    if len(words) == 1 and re.fullmatch(r"[A-Z]{2,}(?:ed|ing|['’]d)", name):
        return False  # "ANDed": a verb made of an abbreviation
    if len(words) > 1 and re.sub(r"['’]?s$", "", words[-1]).lower() in GENERIC_ABBREVIATIONS and (
            re.fullmatch(r"[A-Z]{2,}['’]?s", words[-1])
            or all(is_english_word(w) and not _marked(w) and w not in known for w in words[:-1])):
        return False  # "Base URL", "TS SDKs": a kind of thing ("Python SDK", "AWS SDK" name one)
    if len(words) > 1 and any(w.lower() in GENERIC_ABBREVIATIONS for w in words) and all(
            w.lower() in GENERIC_ABBREVIATIONS or is_english_word(w) and not _marked(w) and w not in known
            for w in words):
        return False  # "SQL Database", "Customer Support AI Agent": a kind of thing named by its words
    if re.fullmatch(r"[YMDHhms]{1,4}(?:[-/:.T ][YMDHhms]{1,4})+", name):
        return False  # "YYYY-MM-DD": a format
    if len(words) > 1 and headings and words[-1].endswith("ing") and is_english_word(words[-1].lower()):
        return False  # "Metadata Filtering", "Memory Sharing": a feature's heading, not a thing
    if len(words) > 1 and (words[-1].lower() in _ASPECT_END or words[-1].lower() in _CREDENTIAL_END
                           and any(w.lower() in _CREDENTIAL_OPENER for w in words[:-1])):
        return False  # "AI Studio API Key", "LongMemEval Overall", "Mem0 Inactive": a value of a thing
    if any(is_compound_adjective(w) for w in words):
        return False  # "HIPAA-compliant", "LLM-based", "Multi-tool": a compound adjective, not a name
    if not any(ch.isalpha() for ch in name) or all(w.lower() in _CALENDAR for w in words) or name[0].isdigit() \
            or _UNIT_OR_VERSION.fullmatch(name):
        return False  # a number, a quantity ("10M", "200-400ms", "MB", "Q1", "V3") or a date is a value
    if all(w.isupper() for w in words) and any(is_english_word(w) and len(w) >= 4 for w in words):
        return False  # "INPUT FROM TASK", "NEGATIVE": a shouted label or value, not a name
    lowered = [w.lower().strip(",.;:!?") for w in words]
    if len(words) == 1 and lowered[0] in _HONORIFICS:
        return False  # "Dr" alone is the title of a name the run goes on with
    if re.split(r"['’]", lowered[0])[0] in PRONOUNS | FUNCTION_WORDS:
        return False  # "I'm", "It's", "How'd"
    if lowered[0] in FUNCTION_WORDS or lowered[0] in PRONOUNS or lowered[0] in CONNECTORS \
            or any(stem in INSTRUCTION_VERBS for stem in _stems(lowered[0])) and not _marked(words[0]):
        return False  # "If …", "Use", "Uses Mem0", "Configured"
    if len(words) == 1 and lowered[0].endswith(("ly", "ed", "ing", "able", "ible")) and not _marked(words[0]) \
            and name not in known:
        return False  # "Seamlessly", "Created", "Passing", "Configurable" opening a line: no name ("Italy",
        #               "Tessaly" written as names mid-sentence are)
    if any(w in _FINITE for w in lowered) or lowered[-1] in FUNCTION_WORDS:
        return False
    content = [w for w, low in zip(words, lowered) if low not in CONNECTORS]
    if any(not (w[:1].isupper() or w[:1].isdigit() or _marked(w)) for w in content):
        return False
    if name in proven:
        return True   # "Stripe", "Kestrel Logistics": a slot only names take, whatever the words
    if all(w.lower() in common or w.lower().rstrip("s") in common for w in content if not _marked(w)) \
            and not all(_marked(w) for w in content) and not any(_camel(w) for w in content):
        return False  # "Configure", "User ID": words the page writes in lower case ("TypeScript Client" names)
    if headings and all(is_english_word(w) and not _marked(w) or w.lower() in PROGRAMMING_WORDS for w in content):
        return False  # documentation's "Documentation", "Voice Configuration", "Webhook Health": a heading's words
    if name in known:
        return True
    if len(content) > 1 and is_english_word(content[0]) and not _marked(content[0]) and content[0] not in known:
        return False  # "Lucky John", "Glad Max": a word before the name, which is tried alone
    # the first word carries the proof ("Uses OpenAI" or "Consistent Chronology" opened a sentence):
    # a name the document uses, a marked word, or a word the document never writes in lower case
    # and English does not know ("Ravi", "Dana Kim"; never "Prepares" or "Feedback" opening a line)
    return content[0] in known or _marked(content[0]) or (
        not any(w.lower() in common for w in content) and not is_english_word(content[0])
        and not (documentation and is_english_compound(content[0])))


_POSSESSIVE = re.compile(r"['’]s$")
# A JavaScript library is named with its file's ending ("Node.js", "Next.js"): a name, not a path.
_JS_LIBRARY = re.compile(r"\b([A-Z][A-Za-z0-9]*)\.js\b")


def _set_as_code(word: str, code: frozenset[str]) -> bool:
    """Whether the document sets `word` as code, also where a claim opens on a camel-case
    identifier and capitalised it ("`batchSize` and ..." reads "BatchSize and ..."; `zod`, a
    package, leaves "Zod" a name)."""
    return word in code or any(c.isupper() for c in word[1:]) and word[:1].lower() + word[1:] in code


def _titled(name: str, known: frozenset[str], common: frozenset[str], speakers: frozenset[str],
            code: frozenset[str], proven: frozenset[str], documentation: bool) -> bool | None:
    """A title before a name ("Dr. Okafor", "Professor Lindqvist", "Deputy Mayor Fiona Gallagher")
    names the person: the title takes a name, so what follows it is one when it is a name by the
    other rules, or capitalised words that no rule of structure refuses ("Dr. Patel", though
    "patel" is in the dictionary); None when `name` opens on no title."""
    words = _TITLE_DOT.sub(r"\1", name).split()
    titles = 0
    while titles < len(words) - 1 and words[titles].lower() in _TITLES and words[titles][:1].isupper():
        titles += 1
    if not titles:
        return None
    rest = words[titles:]
    return is_name(" ".join(rest), known, common, speakers, code, proven, documentation) or (
        len(rest) <= 3 and all(w[:1].isupper() and w.lower() not in FUNCTION_WORDS | PRONOUNS for w in rest)
        and not _NAME_MARKUP.search(" ".join(rest)) and not any(_set_as_code(w, code) for w in rest))


def _incorporated(name: str) -> bool:
    """A company's name closed by its legal form ("Acme Corp", "Bank of America Corp"): capitalised
    words, none a function word, pronoun or verb, then the form."""
    words = name.split()
    if len(words) < 2 or words[-1].rstrip(".").lower() not in _LEGAL_FORMS or not words[-1][:1].isupper() \
            or _NAME_MARKUP.search(name):
        return False
    return words[0][:1].isupper() and all(
        w in CONNECTORS or w[:1].isupper() and w.lower() not in FUNCTION_WORDS | PRONOUNS | _FINITE for w in words[:-1])


# Words in -ly that describe a thing, not how something is done ("the monthly invoice run").
_LY_ADJECTIVES = frozenset("""hourly daily nightly weekly monthly quarterly yearly early family friendly only
assembly supply""".split())


def _modifier(word: str) -> bool:
    """A capitalised or marked word before a common noun that says which one: "Kubernetes", "CI",
    "Q4", "COBOL" (never a function word: "If the …")."""
    return bool(re.fullmatch(r"[A-Z][\w'’-]*|[A-Z0-9][A-Z0-9-]*", word)) and word.lower() not in FUNCTION_WORDS \
        and word.lower() not in PRONOUNS


def is_thing(phrase: str) -> bool:
    """A common noun phrase a relation names as its end ("data validation", "the schema change",
    "the Kubernetes migration" once cleaned): at most four words, the last and any other that is
    no name or abbreviation in lower case, opening on no function word or pronoun, ending on no
    function word, holding no verb the rules know and no adverb. Its first word may look like an
    instruction: the relation's own verb came before it ("the search team")."""
    words = phrase.split()
    if not 1 <= len(words) <= 4 or _NAME_MARKUP.search(phrase):
        return False
    # the head, and so the phrase, is a common noun; the words before it may be names or
    # abbreviations that say which one ("the Kubernetes migration", "the CI pipeline", "the Q4 budget")
    plain = words[-1:] + [w for w in words[:-1] if not _modifier(w)]
    if not all(re.fullmatch(r"[a-z0-9][a-z0-9'’-]*", w) for w in plain):
        return False
    first, last = words[0], words[-1]
    if first in FUNCTION_WORDS or first in PRONOUNS or last in FUNCTION_WORDS or any(w in _FINITE for w in words):
        return False
    return not any(w.endswith("ly") and w not in _LY_ADJECTIVES for w in words)


_OPENING_LABEL = re.compile(r"^[^:.!?]{1,60}: (?=\S)")
_ATTRIBUTION = re.compile(r"^[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)? said that ")


def known_names(texts: list[str], speakers: frozenset[str] = frozenset(),
                documentation: bool = True) -> tuple[frozenset[str], frozenset[str]]:
    """(the words a document uses as names, the words it writes in lower case): `document_names`,
    the speakers, and every word of a longer name it uses ("Dana Kim" makes a lone "Dana" a name)."""
    # "Maria said that Lucky John ..." puts the reported sentence's first word mid-sentence: it is
    # read as the sentence's opening, which proves nothing
    texts = [_ATTRIBUTION.sub("", t) for t in texts]
    if documentation:   # nor does a label's run ("Create or Open Your Dify Project: …")
        texts = [_OPENING_LABEL.sub("", t) for t in texts]
    # a page of documentation capitalises its headings' words in lists of links ("the Process"):
    # there an English word must be written as a name twice
    known, common = document_names(texts, english_twice=documentation) | speakers, common_words(texts)
    longer = {w for text in texts for name in names_in(text, known, common, speakers, documentation=documentation)
              if " " in name
              for w in name.split() if w.lower() not in CONNECTORS and not is_english_word(w)}
    return known | longer, common


# An identifier set as code: in backticks, or in an HTML <code> element (MDX pages write both).
_CODE_SPAN = re.compile(r"`([A-Za-z_][\w.]*)`|<code>([A-Za-z_][\w.]*)</code>")
# A fenced block at any indent: a page of MDX indents the code inside its components (`<Tab>`,
# `<Accordion>`), which CommonMark would read as an indented block of the fence's own text.
_FENCED = re.compile(r"^[ \t]*(```|~~~)([^\n]*)\n(.*?)(?:^[ \t]*\1|\Z)", re.MULTILINE | re.DOTALL)
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*[a-z0-9][A-Z][A-Za-z0-9_]*")


def prose_of(text: str) -> str:
    """The text without its code, links' targets, addresses and tags: fenced blocks, backtick
    spans, `](…)`, URLs, host names, paths and HTML tags taken out ("gemini" in a link's address,
    "cursor" in "cursor.com", are no words the page writes)."""
    return _NOT_PROSE.sub(" ", _FENCED.sub("\n", text))


_NOT_PROSE = re.compile(r"`[^`\n]*`|\]\([^)\n]*\)|<[^>\n]*>|\b[a-z][a-z0-9+.-]*://\S+|\S*[/\\._]\S*[/\\._]\S*|"
                        r"\{[^}\n]*\}|\b[a-z][\w-]*\.[a-z]{2,}\b")   # and host names: "cursor.com" is no word


_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t][^\n]*$", re.MULTILINE)


def sentences_of(text: str) -> str:
    """The page's running prose (`prose_of`) without its headings, whose capitals title a section
    ("Mem0 Client and Agent Definition") rather than list names."""
    return _HEADING.sub("", prose_of(text))


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?:[\w-]+:.*\n)+---[ \t]*(?:\n|\Z)")


def is_documentation(text: str) -> bool:
    """Whether a document reads as a page of documentation: it sets code (a fenced block or a
    backtick span), or opens on a front matter block of fields, as the pages of a documentation
    site do. Such a page capitalises its headings', labels' and features' words, and says what the
    parts of its software do."""
    return bool(_FENCED.search(text) or re.search(r"`[^`\n]+`", text) or _FRONT_MATTER.match(text))


def code_words(text: str) -> frozenset[str]:
    """The identifiers a document sets as code: in backticks ("`AsyncMemory`") or a <code> element,
    the names its fenced blocks define ("class PersonalAITutor:"), and the CamelCase ones of its
    fenced blocks that its prose never writes ("BatchSize" in a config example). Code the document
    names is never an entity, though its capitals look like a product's. Written as regular
    expressions, not a Markdown parse, since only these marks are read."""
    blocks = [block.group(3) for block in _FENCED.finditer(text)]
    fenced = {w for block in blocks for w in _IDENTIFIER.findall(block)}
    # a block's identifier that the prose also writes unmarked is a name the code happens to use
    # ("OpenAI" in prose and `client = OpenAI()` in an example; "ElizaOS" and github.com/elizaOS),
    # unless the code defines it ("class PersonalAITutor:"): then the prose names the example's class
    prose = set(re.findall(r"[\w.]+", prose_of(text)))
    defined = {word or alias for block in blocks for word, alias in _DEFINED.findall(block)}
    spans = {ticked or tagged for ticked, tagged in _CODE_SPAN.findall(text)}
    return frozenset(spans | defined
                     | (fenced - prose - {w[:1].lower() + w[1:] for w in prose}))


# A name the code of a block defines: a class, a function, an interface, a struct, an enum, or a
# type alias ("type Memory = …"; "the type of" in a comment defines nothing).
_DEFINED = re.compile(r"\b(?:class|def|function|interface|struct|enum)\s+([A-Za-z_]\w*)"
                      r"|\btype\s+([A-Za-z_]\w*)\s*[=<]")


# The info strings of a fenced block of shell ("```bash", "```bash cURL", "```console").
_SHELL = frozenset({"bash", "sh", "shell", "console", "zsh", "terminal", "powershell", "ps1", "cmd", "fish"})
_COMMAND = re.compile(r"(?:\$\s+|>\s+)?(?:sudo\s+)?([a-z][a-z0-9-]*)(?:\s+([a-z][a-z0-9-]*)(?![\w./]))?")


def commands(text: str) -> frozenset[str]:
    """The commands a page runs in its blocks of shell, each as its first word and with its
    subcommand ("docker", "docker compose", "pip install"; "docker-compose" reads "docker compose"),
    lower case. A line that goes on from the one before it (after a backslash) runs nothing."""
    found = set()
    for block in _FENCED.finditer(text):
        if (block.group(2).split() or [""])[0].lower() not in _SHELL:
            continue
        going_on = False
        for line in block.group(3).splitlines():
            line = line.strip()
            if not going_on and (match := _COMMAND.match(line)):
                first = match.group(1).replace("-", " ")
                found.add(first)
                if match.group(2):
                    found.add(f"{first} {match.group(2).replace('-', ' ')}")
            going_on = line.endswith("\\")
    return frozenset(found)


def commanded(written: list[str], text: str) -> frozenset[str]:
    """Tools a page names and runs: a run of one or two capitalised words the `written` prose writes
    mid-sentence ("the internal Docker network", "files and Docker Compose definitions") whose
    lower-case form is a command the shell blocks of `text` run (`docker compose up -d`) is the
    tool's name, though English knows the word ("docker"). A word opening a sentence ("Make sure
    …") proves nothing, nor does a command the prose never writes capitalised ("`cd`")."""
    run = commands(text)
    if not run:
        return frozenset()
    found = set()
    for prose in written:
        for match in _MID_SENTENCE_CAPITAL.finditer(prose):
            words = match.group(1).split()
            found.update(" ".join(words[:n]) for n in (1, 2)
                         if len(words) >= n and " ".join(words[:n]).lower().replace("-", " ") in run)
    return frozenset(found)


_PARTICIPANTS_LINE = re.compile(r"^\W*(?:participants|attendees|present)\W*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_SPEAKER_LINE = re.compile(r"^(?:\[[^\]\n]*\]\s*)?\**([A-Z][\w'’-]+(?: [A-Z][\w'’-]+)?)\**:\**\s", re.MULTILINE)


def speakers_in(opening: str | None) -> frozenset[str]:
    """Who speaks in a document, from its opening: a "Participants:" line, and the names that open
    its turns ("[D1:3 | …] Maria: …")."""
    text = opening or ""
    found = {n.strip() for line in _PARTICIPANTS_LINE.findall(text) for n in re.split(r",|\band\b|;", line)}
    # a line that opens on "Label:" is a turn only when the label is no English word ("Debug:",
    # "Database:" label a line of documentation; "Maria:" opens a turn)
    found |= {n for n in _SPEAKER_LINE.findall(text) if not is_english_word(n.split()[0])}
    return frozenset(n for n in found if n)


_NAME_RUN = re.compile(rf"(?<![\w'’])[A-Z0-9]{_NAME_WORD}(?:[ \t]+(?:(?:of|de|du|von|van|the)[ \t]+){{0,2}}[A-Z]{_NAME_WORD}){{0,4}}")
_CALENDAR = frozenset("""january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun monday tuesday wednesday thursday friday saturday sunday
today tomorrow yesterday""".split())
_LOWER_WORD = re.compile(r"(?<![\w'’])[a-z][a-z'’-]*")


# A sentence that opens on one capitalised word, then a verb in the third person (or a form of
# "be" or "have") and a determiner: "Stripe processes the payments", "Berlin is the team's base".
_BARE_SUBJECT = re.compile(r"(?:^|[.!?]\s+)([A-Z][a-z]+) (?:[a-z]+(?:s|ed)|is|was|has|had) "
                           r"(?:the|a|an|our|its|their|his|her|my|your|all|every|each)\b")
# Endings of abstract and mass nouns, which stand bare as a subject ("Security matters",
# "Friendship is …"), where a bare singular count noun cannot: there it is a name.
_ABSTRACT = ("tion", "sion", "ity", "ness", "ment", "ship", "dom", "ism", "ance", "ence", "hood", "ing")


def bare_subjects(texts: list[str], common: frozenset[str]) -> frozenset[str]:
    """English words a document uses as names by grammar: a singular noun that opens a sentence
    with no determiner before its verb and object ("Stripe processes the payments", "Oracle hosts
    the database") is a name, as a count noun cannot stand bare there. Not a word the document
    also writes in lower case, a plural, a number, a day or an abstract noun ("Security matters",
    "Documentation covers the endpoints"). Words English does not know need no such proof."""
    found = set()
    for text in texts:
        for match in _BARE_SUBJECT.finditer(text):
            word = match.group(1)
            low = word.lower()
            if _ENDS_ON_TITLE.search(text[:match.start(1)]):
                continue   # "Dr. Patel heads …": the dot is the title's, and Patel its name
            if low in common or low in _NOT_PROPER or low in _CALENDAR or not is_english_word(word) \
                    or low.endswith("s") and not low.endswith("ss") \
                    or any(low.endswith(end) and len(low) - len(end) >= 3 for end in _ABSTRACT):
                continue
            found.add(word)
    return frozenset(found)


# A list of capitalised items ("Claude Code, Cursor, and Codex", "OpenAI, Anthropic, Google, Groq"):
# an item is one to three capitalised words; items are parted by commas, "and", "or".
_ITEM = rf"[A-Z]{_NAME_WORD}(?: [A-Z0-9]{_NAME_WORD}){{0,2}}"
_LIST = re.compile(rf"(?:(?<=[\s(])|^){_ITEM}(?:(?:, (?:and |or )?| and | or ){_ITEM})+(?![\w'’])")
_LIST_SEPARATOR = re.compile(r", (?:and |or )?| and | or ")


def coordinated(texts: list[str], accepted) -> frozenset[str]:
    """Items of a list that names things of one kind: in a list of three or more capitalised
    items, two of which `accepted` takes for names without this rule, or of two items beside a
    product's name written in camel case or with a digit ("Python and TypeScript", "Bedrock and
    OpenSearch"), every other item that is capitalised words is a name too ("Claude Code, Cursor,
    and Codex": a list of names lists names, whatever the dictionary says of "Cursor"). A list of
    features ("Add, Search, and Delete") holds no name to vouch for the rest."""
    found = set()
    for text in texts:
        for match in _LIST.finditer(text):
            items = [clean(i) for i in _LIST_SEPARATOR.split(match.group())]
            named = [i for i in items if accepted(i)]
            if len(named) >= 2 and len(items) >= 3 or len(items) == 2 and any(
                    re.search(r"[a-z].*[A-Z0-9]|[0-9]", i) for i in named):
                found.update(i for i in items if i not in named and i.split()[0].lower() not in _NOT_PROPER)
    return frozenset(found)


_SPELLED_OUT = re.compile(r"\b([A-Z]{2,6})\s+\(([A-Z][\w-]*(?: (?:of|for|and|the|[A-Z][\w-]*)){1,7})\)"
                         r"|\b([A-Z][\w-]*(?: (?:of|for|and|the|[A-Z][\w-]*)){1,7})\s+\(([A-Z]{2,6})\)")


def spelled_out(texts: list[str]) -> frozenset[str]:
    """The long form of an abbreviation, given beside it, is a name: "MCP (Model Context Protocol)",
    "General Data Protection Regulation (GDPR)", where the capitalised words' initials spell it. The
    long form of a kind of thing ("API (Application Programming Interface)") names no one thing."""
    found = set()
    for text in texts:
        for match in _SPELLED_OUT.finditer(text):
            short, long = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
            initials = "".join(w[0] for w in long.split() if w[0].isupper())
            if initials == short and short.lower() not in GENERIC_ABBREVIATIONS:
                found.add(long)
    return frozenset(found)


def common_words(texts: list[str]) -> frozenset[str]:
    """The words a document's prose writes in lower case (`prose_of`: not "cursor" of a link to
    cursor.com)."""
    return frozenset(w for text in texts for w in _LOWER_WORD.findall(prose_of(text)))


_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*(?:[-*+]|\d+\.)?\s*)$")
_OBJECT_START = re.compile(r"\s+(?:the|a|an|your|my|our|their|this|that|these|those|it|them|all|any|each|every|"
                           r"up|out|to|with|from|for|in|on)\b")


def _opens_instruction(text: str, match: re.Match[str], words: list[str], known: frozenset[str]) -> bool:
    """A capitalised word that opens a sentence and is followed by its object ("Automate the
    weekly report", "Downscale your images") is a verb of an instruction, whatever the dictionary
    says: it is not part of a name."""
    first = words[0]
    return (len(words) == 1 and first not in known and not _marked(first)
            and bool(_SENTENCE_START.search(text[:match.start()])) and bool(_OBJECT_START.match(text[match.end():])))


_LINK_TEXT_END = re.compile(r"[^\[\]\n]*\]\(")


def names_in(text: str, known: frozenset[str], common: frozenset[str] = frozenset(),
             speakers: frozenset[str] = frozenset(), code: frozenset[str] = frozenset(),
             proven: frozenset[str] = frozenset(), documentation: bool = True) -> list[str]:
    """The names a text uses, in order, each once: runs of capitalised words that `is_name` accepts
    ("John's colleague Rob" → John, Rob); a run that is no name is tried without its first word
    ("Thanks Maria" → Maria)."""
    found: list[str] = []
    runs = []
    for match in _NAME_RUN.finditer(text):
        if text.startswith("(", match.end()):
            continue  # "AddMemories()", "Memory(config)": a function of the code
        words = match.group().rstrip(".,;:!?").split()
        if _opens_instruction(text, match, words, known):
            words = words[1:]
        if documentation and text.startswith(": ", match.end()) and " ".join(words) not in known:
            continue  # a label of documentation ("Multi-Agent Support: A single service …") names its feature
        if documentation and (opening := text.rfind("[", 0, match.start())) >= 0 \
                and _LINK_TEXT_END.match(text, match.end()):
            # a link's text titles the page it leads to: "[Deepgram Documentation](…)" names
            # Deepgram, "[Self-Hosted Setup](…)" nothing; an image's describes it ("![Mem0 Dify
            # Integration](…)")
            image = opening > 0 and text[opening - 1] == "!"
            while words and (image or (is_english_word(words[-1]) or is_english_compound(words[-1]))
                             and not any(_marked(part) for part in words[-1].split("-"))
                             and " ".join(words) not in proven):
                words = words[:-1]
        # two speakers side by side ("tell Maria John started") are two names, as are an owner
        # and what it owns ("Google's Gemini")
        if len(words) > 1 and sum(w in speakers for w in words) > 1:
            runs += [[w] for w in words]
        else:
            while (cut := next((i + 1 for i, w in enumerate(words[:-1]) if _POSSESSIVE.search(w)), None)) is not None:
                runs.append(words[:cut])
                words = words[cut:]
            runs.append(words)
    for words in runs:
        while words:
            name = clean(" ".join(words))
            if is_name(name, known, common, speakers, code, proven, documentation):
                if name not in found:
                    found.append(name)
                break
            words = words[1:]
    return found
