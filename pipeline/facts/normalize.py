"""`normalize_relations` for the `rules` backend: a claim becomes zero or more assertions.

An assertion is a relation (two entities and a governed predicate) or an observation (a
statement about one entity). Patterns, not a model, read the claim:

- an attributed claim ("Dana believes ...", "Ravi said that ...") is one observation on the
  holder of the view, never a fact about what they talked about;
- a dated plan ("The cutover is on June 15", "Launch moves to October") is an observation with a
  slot (`attribute` "cutover date") and a `value`, anchored on the subject, or on the document's
  topic when the subject is a bare head noun;
- a verb from the synonym table between two entities is a relation (passives turned around,
  compound subjects and objects split, negation kept as `negated`);
- "moved (from X) to Y", "takes over", "now ..." mark a change: the relation starts a new state and
  may close an earlier one (`ends`);
- anything else said about a named subject is an observation on it; a bare or pronoun subject
  with no topic gives nothing (the claim keeps the statement).

Why hand-written: no maintained library maps English clauses onto a governed predicate
vocabulary; a dependency parser would need model weights the rules backend must not load.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pipeline.facts import names, personal, vocabulary
from pipeline.facts.assertion import Assertion
from pipeline.time import timeparse, windows

VERSION = "rules-normalize-1"


# --- verb table: (surface forms, predicate, passive) ------------------------------------------

_V = [
    ("works on|worked on|working on|work on|been on|is on|are on|was on|were on", "works_on", False),
    ("joins|joined|join|joining|started on|starts on|start on|began on|begins on", "works_on", False),
    ("works for|worked for|working for|work for|works at|worked at|work at|working at|employed by|employed at",
     "works_for", False),
    ("is a member of|are members of|was a member of|were members of|became a member of|a member of|"
     "members of|member of",
     "member_of", False),
    ("affiliated with|associated with", "affiliated_with", False),
    ("co-founded|cofounded|founded", "founded", False),
    ("founded by|co-founded by", "founded", True),
    ("located in|based in|headquartered in", "located_in", False),
    ("is part of|are part of|was part of|is a part of|belongs to|belong to|belonged to|part of", "part_of", False),
    ("is the author of|was the author of|wrote|writes|write|writing|authored|authors", "authored", False),
    ("written by|authored by", "authored", True),
    ("created|creates|create|creating|built|builds|build|building|designed|designs|design|designing|"
     "developed|develops|develop|developing", "created", False),
    ("created by|built by|designed by|developed by", "created", True),
    ("is about|are about|was about|covers|covered|cover|describes|described|describe", "about", False),
    ("knows about|know about|knew about|is an expert in|is an expert on|an expert in|an expert on|"
     "specializes in|specialises in|specialized in|specialised in", "knows_about", False),
    ("knows|knew|known|know", "knows", False),
    ("participated in|participates in|participate in|attended|attends|attend|attending|"
     "took part in|takes part in|take part in", "participated_in", False),
    ("uses|used|use|using|relies on|relied on|rely on|runs on|ran on|run on|running on", "uses", False),
    ("used by", "uses", True),
    ("reports to|reported to|report to|reporting to", "reports_to", False),
    ("related to|linked to|relates to", "related_to", False),
    ("blocks|blocked|block|blocking", "blocks", False),
    ("blocked by", "blocks", True),
    ("depends on|depended on|depend on|dependent on|requires|required|require|requiring", "depends_on", False),
    ("concerns|affects|affected|affect", "concerns", False),
    ("decided by", "decided_by", False),
    ("assigned to", "assigned_to", False),
    ("pursues|pursued|pursue|pursuing", "pursues", False),
    ("leads|led|lead|leading|heads|headed|head|heading", "other:leads", False),
    ("led by|headed by", "other:leads", True),
    ("takes over|took over|take over|taking over|taken over|owns|owned|own|owning", "other:owns", False),
    ("owned by", "other:owns", True),
    ("manages|managed|manage|managing", "other:manages", False),
    ("managed by", "other:manages", True),
    ("signs off on|signed off on|sign off on|approves|approved|approve|approving", "other:approves", False),
    ("approved by", "other:approves", True),
    ("reviews|reviewed|review|reviewing", "other:reviews", False),
    ("reviewed by", "other:reviews", True),
    ("sponsors|sponsored|sponsor|sponsoring", "other:sponsors", False),
    ("sponsored by", "other:sponsors", True),
]
_FORMS: list[tuple[str, str, bool]] = sorted(
    ((form, predicate, passive) for forms, predicate, passive in _V for form in forms.split("|")),
    key=lambda f: -len(f[0]))
_PREDICATE_OF = {form: (predicate, passive) for form, predicate, passive in _FORMS}
_TAKEOVER = frozenset({"takes over", "took over", "take over", "taking over", "taken over", "joins", "joined",
                       "join", "joining", "started on", "starts on", "start on", "began on", "begins on"})

_AUX = (r"(?:(?:will|would|shall|now|still|also|currently|already|just|has|have|had|is|are|was|were|been|be|"
        r"to|recently|officially|formally|jointly|newly|again|going)\s+)*")
_NEG = r"(?P<neg>(?:does|do|did|is|are|was|were|will|has|have|can|could)\s+not\s+|(?:doesn't|don't|didn't|isn't|" \
       r"aren't|wasn't|weren't|won't|hasn't|haven't)\s+|no\s+longer\s+|never\s+|not\s+)?"
_VERB_RE = re.compile(r"(?<![\w-])" + _AUX + _NEG + _AUX + r"(?P<verb>" +
                      "|".join(re.escape(f) for f, _, _ in _FORMS) + r")(?![\w-])", re.IGNORECASE)

_CLAUSE_SPLIT = re.compile(r",?\s+and\s+(?=" + _AUX + r"(?:not\s+)?(?:" +
                           "|".join(re.escape(f) for f, _, _ in _FORMS) + r")(?![\w-]))", re.IGNORECASE)

_ATTRIBUTION = re.compile(
    r"^(?P<holder>.+?)\s+(?:(?:also|still|strongly|privately|publicly)\s+)?(?:said|says|believes|believed|"
    r"thinks|thought|expects|expected|argues|argued|worries|worried|feels|felt|claims|claimed|noted|"
    r"mentioned|suggested|suggests|warned|warns|hopes|hoped|fears|feared|doubts|doubted|"
    r"insists|insisted|told\s+\w+|is\s+convinced|was\s+convinced|is\s+worried|was\s+worried|"
    r"is\s+concerned|was\s+concerned)(?:\s+that)?\b", re.IGNORECASE)

_MOVE = re.compile(
    r"^(?P<s>.+?)\s+(?:(?:has|have|had|is|are|was|were|will|officially|now)\s+)*(?:moved|moves|moving|move|"
    r"transferred|transfers|transferring|transfer|switched|switches|switching|switch|went|goes|going)"
    r"(?:\s+(?:back|over))?(?:\s+from\s+(?P<x>.+?))?\s+to\s+(?P<y>.+)$", re.IGNORECASE)

# Dated plans: the subject's date is the value of a slot.
_PLAN = re.compile(
    r"^(?P<s>.+?)\s+(?:(?:(?:is|are|was|were|has\s+been|have\s+been|will\s+be|remains|stays)\s+"
    r"(?:still\s+|now\s+|currently\s+|tentatively\s+|officially\s+)?"
    r"(?P<how>scheduled|planned|set|due|expected|booked|targeted|slated|on|in|for|moved|postponed|"
    r"pushed(?:\s+back)?|brought\s+forward|rescheduled|delayed))|"
    r"(?:(?:still\s+|now\s+)?(?P<how2>moves|moved|has\s+moved|slips|slipped|stays|stay)))"
    r"(?:\s+(?:for|on|in|to|until|by|at|at\s+the\s+end\s+of|at\s+the\s+start\s+of))?\s+(?P<d>.+)$",
    re.IGNORECASE)
_PLAN_CHANGE = re.compile(r"moves|moved|moving|slips|slipped|postponed|pushed|brought|rescheduled|delayed",
                          re.IGNORECASE)
_AGREED_MOVE = re.compile(
    r"^(?P<s>.+?)\s+(?:agreed|decided|chose|voted|plan|plans|planned)\s+(?:on\s+\S+\s+)?to\s+"
    r"(?:move|push|postpone|reschedule|shift|bring\s+forward)\s+(?P<t>.+?)\s+to\s+(?P<d>.+)$", re.IGNORECASE)

_DATE_PARTS = [timeparse.ISO_RE, timeparse.MONTH_YEAR_RE, timeparse.DMY_RE, timeparse.MDY_RE,
               timeparse.YEAR_QUARTER_RE, timeparse.QUARTER_RE, timeparse.BARE_MONTH_RE, timeparse.YEAR_RE]
_DATE_FILLER = re.compile(r"\b(?:early|late|mid|the|end|start|beginning|middle|of|week|weekend|"
                          r"first|second|third|last|half|next|this|year|month|quarter|monday|tuesday|"
                          r"wednesday|thursday|friday|saturday|sunday|utc|at|\d{1,2}:\d{2})\b|[\s,.\-]",
                          re.IGNORECASE)

# Where an object noun phrase ends: a time adjunct, a subordinate clause, another clause.
_OBJECT_END = re.compile(
    r"\s+(?:on|in|by(?!\s+(?:the|a|an)\b)|from|since|until|till|before|after|during|at|as\s+of|starting|through|for|with|"
    r"this|next|last|yesterday|today|tomorrow|every|each|because|so|while|when|which|who|that|"
    r"until|to\s+(?!do\b)\w+\s+(?:the|a|an)\b)\b.*$|\s*[,;:(].*$", re.IGNORECASE)
_IRREGULAR_VERB_FORMS = frozenset("""led built wrote knew known ran took began held headed""".split())
# A noun phrase holding one of these is a clause, not a name.
_CLAUSE_WORDS = re.compile(r"\s(?:is|are|was|were|has|have|had|will|would|does|did|not)\s", re.IGNORECASE)
_NEITHER = re.compile(r"^neither\s+(.+?)\s+nor\s+(.+)$", re.IGNORECASE)
_COPULA_ON = frozenset({"is on", "are on", "was on", "were on", "been on"})
# "is on X" means working on X only when X is a team or a piece of work.
_TEAMISH = frozenset("""team squad project migration rewrite crew group committee board rotation taskforce
initiative program programme effort workstream upgrade launch guild council panel""".split())
_LEADING_ADJUNCT = re.compile(
    r"^(?:before|after|since|on|in|during|from|until|as\s+of|last|next|this|at|by|earlier|later|today|"
    r"yesterday|following|despite|because\s+of|according\s+to)\b[^,]{0,60},\s*", re.IGNORECASE)
# "owns the schema change from 1 June": a state that begins on a date.
_STARTS = re.compile(r"\b(?:from|starting(?:\s+on|\s+in)?|as\s+of|effective|beginning)\s+(?!now\b)(?P<d>[^,;]+)$",
                     re.IGNORECASE)
_NOW = re.compile(r"\b(?:now|from\s+now\s+on|as\s+of\s+today|henceforth)\b", re.IGNORECASE)
_SPLIT_AND = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*")
_COMMON_HEADS = frozenset("""launch cutover deadline release rollout migration plan project budget schedule
meeting review system service app team database milestone handover go-live golive demo pilot upgrade
deploy deployment freeze audit kickoff retro sprint roadmap contract renewal invoice payment report
workshop hearing trial conference offsite onboarding interview beta alpha outage incident""".split())
_IRREGULAR = frozenset("""is are was were has have had will would can could should may might must does did do
fell rose took made met went came began left grew saw sent gave got kept ran said wrote found built held led
paid sold spent stood told won chose became broke drew drove knew lost meant put read set spoke understood
needs remains stays""".split())


def is_date_phrase(text: str) -> bool:
    """True when `text` is nothing but a date expression ("June 15", "the end of February", "Q2 2026")."""
    rest = text
    found = False
    for pattern in _DATE_PARTS:
        rest, n = pattern.subn(" ", rest)
        found = found or n > 0
    return found and not _DATE_FILLER.sub("", rest)


def date_value(claim: dict, when: str) -> str:
    """The slot value: the date phrase read against the claim's said-on time, at its own precision
    ("June 15" said in 2026 → 2026-06-15; "October" → 2026-10); the words as said when they do not
    resolve."""
    reading = timeparse.read_time(when, claim.get("asserted_at"))
    if reading.precision == "unknown":  # a bare month name needs its preposition to read as a date
        reading = timeparse.read_time(f"in {when}", claim.get("asserted_at"))
    start, end, precision = reading.valid_from, reading.valid_until, reading.precision
    if start is None and end is not None:
        start = end
    if start is None:
        return when.strip().rstrip(".")
    return {"day": start.date().isoformat(), "instant": start.isoformat(), "month": f"{start:%Y-%m}",
            "year": f"{start:%Y}", "quarter": f"{start.year}-Q{(start.month - 1) // 3 + 1}"
            }.get(precision, start.date().isoformat())


def _is_bare(phrase: str, sentence_initial: bool) -> bool:
    if names.is_bare_head(phrase):
        return True
    words = [w for w in names.clean(phrase).split(" ") if w]
    # A capital at the start of a sentence is not a proper-noun signal.
    return sentence_initial and len(words) == 1 and words[0].lower() in _COMMON_HEADS


def _entity_or_none(phrase: str, sentence_initial: bool = False) -> str | None:
    phrase = phrase.strip()
    if not phrase or names.is_pronoun(phrase) or _is_bare(phrase, sentence_initial):
        return None
    if re.search(r"\w\(", phrase):
        return None  # "AddMemories():", "search()": a function of the code, not a named thing
    name = names.clean(phrase)
    if not names.is_entity(name) or len(name.split()) > 8 or _CLAUSE_WORDS.search(f" {name} "):
        return None
    return name


def _split_names(phrase: str, sentence_initial: bool = False) -> list[str] | None:
    """Compound noun phrases ("Priya and Marco") as names; None when any part is not an entity."""
    parts = [p for p in _SPLIT_AND.split(phrase.strip()) if p]
    if not parts:
        return None
    found = []
    for i, part in enumerate(parts):
        name = _entity_or_none(part, sentence_initial and i == 0)
        if name is None:
            return None
        found.append(name)
    return found


def _object_phrase(rest: str) -> str:
    """The object noun phrase at the start of `rest`; a list ("Kafka, Redis and the registry") is
    kept whole so that it splits into one relation per item."""
    rest = rest.strip().rstrip(".")
    items = re.split(r"\s*,\s*", rest)
    if len(items) > 1 and re.search(r"\s(?:and|&)\s", items[-1]):
        last = _OBJECT_END.sub("", items[-1]).strip()
        if all(_entity_or_none(i) for i in items[:-1]) and last:
            return ", ".join(items[:-1] + [last])
    return _OBJECT_END.sub("", rest).strip()


# A statement that opens with a capitalised name followed by a lower-case word is about that name.
_PROPER_START = re.compile(r"^((?:[A-Z][\w'’.&-]*)(?:\s+[A-Z][\w'’.&-]*){0,3})\s+(?=[a-z])")
_NOT_NAMES = frozenset("""The A An This That These Those Our Their Its His Her My Your We They He She It There
Here Each Every All Some Most Many Few No None Both Either Neither If When While After Before Since During Until
Once As At In On By For From With Without About Q1 Q2 Q3 Q4 Next Last First New Old""".split())
_FOLLOWERS = frozenset("""the a an to in on for with about no its his her their our every each all some more
less by at from up down out over into one two three four five six seven eight nine ten eleven twelve""".split())


# A capitalised first word followed by one of these opens an instruction ("Use the key", "Add it
# to ...") or a fronted phrase, never a subject and its verb.
_OBJECT_STARTS = frozenset("""the a an your my our their this that these those it them to for with in on at
from all any each every up out some one""".split())
# A table row read out ("Flag: --force, Description: Skip the prompt."): fields, not a statement.
_FIELD_ROW = re.compile(r"^[^:,]{1,40}: [^,]+(?:, [^:,]{1,40}: .+)+$")
# A list item's label ("Consistent Chronology: events stay in order"): the statement follows it.
_ITEM_LABEL = re.compile(r"^(?:[A-Z][\w'’-]*(?: [\w'’-]+){0,4}):\s+(?=\S)")


def _observation_subject(text: str) -> str | None:
    """The subject noun phrase of a statement, up to its first verb, when it names an entity."""
    proper = _PROPER_START.match(text)
    if proper and proper.group(1).split()[0] not in _NOT_NAMES and proper.group(1).lower() not in _COMMON_HEADS:
        following = text[proper.end():].split(" ", 1)[0].lower()
        if following in _OBJECT_STARTS:
            return None  # "Use the API key": an instruction, its first word a verb
        return _entity_or_none(proper.group(1), sentence_initial=True)
    words = text.split()
    for i, word in enumerate(words[1:9], start=1):
        w = word.lower().strip(",;")
        nxt = words[i + 1].lower().strip(",;") if i + 1 < len(words) else ""
        if w in _IRREGULAR or (w.endswith("ed") and len(w) > 4) or (
                w.endswith("s") and not w.endswith(("ss", "us", "is")) and (nxt in _FOLLOWERS or nxt[:1].isdigit())):
            return _entity_or_none(" ".join(words[:i]), sentence_initial=True)
    return None


def normalize_claim(claim: dict, topic: str | None = None) -> list[Assertion]:
    """Assertions of one claim: `claim` has `claim_text`, `is_attributed` and its window fields
    (`valid_from`, `valid_until`, `precision`, `kind`) as the claim stores them."""
    text = re.sub(r"\s+", " ", claim["claim_text"]).strip().rstrip(".")
    text = _LEADING_ADJUNCT.sub("", text)
    if _FIELD_ROW.match(text):
        return []
    label = re.match(r"^([^:]{1,40}):\s+(?=\S)", text)
    if label and (is_date_phrase(label.group(1)) or _ITEM_LABEL.match(text)):
        text = text[label.end():]
    text = text[:1].upper() + text[1:]
    if not text:
        return []
    attributed = _ATTRIBUTION.match(text)
    holder = _split_names(attributed.group("holder"), True) if attributed else None
    if holder or claim.get("is_attributed"):
        holder = holder or ([_observation_subject(text)] if _observation_subject(text) else None)
        if not holder:
            return []
        observed = [Assertion(ord=0, kind="observation", subject=h, statement=claim["claim_text"].strip())
                    for h in holder]
        # what the holder says of their own family and pets is still stated: "John said that John's
        # daughter Sara ..." relates John and Sara
        reported = personal.relations(text[attributed.end():].strip() if attributed else text)
        return [replace(a, ord=i) for i, a in enumerate(observed + [r for r in reported
                                                                   if r.predicate.startswith(("other:has_", "other:owns"))])]
    life = personal.relations(text)
    if life:
        return [replace(a, ord=i, statement=claim["claim_text"].strip()) for i, a in enumerate(life)]
    for parse in (_plan, _move, _relations):
        found = parse(text, claim, topic)
        if found is not None:
            return [replace(a, ord=i) for i, a in enumerate(found)]
    subject = _observation_subject(text)
    if subject is None:
        words = text.split()
        bare = next((" ".join(words[:i]) for i in range(1, min(len(words), 5))
                     if _is_bare(" ".join(words[:i]), True)), None)
        if bare is None or topic is None:
            return []
        subject = topic
    return [Assertion(ord=0, kind="observation", subject=subject, statement=claim["claim_text"].strip())]


def _plan(text: str, claim: dict, topic: str | None) -> list[Assertion] | None:
    agreed = _AGREED_MOVE.match(text)
    if agreed and is_date_phrase(_object_phrase(agreed.group("d")) or agreed.group("d")):
        subject_phrase, when, how = agreed.group("t"), agreed.group("d"), "moves"
    else:
        m = _PLAN.match(text)
        if not m:
            return None
        when = re.split(r"\s*[,;(]|\s+(?:because|so|as|while|which|after|once)\b", m.group("d"))[0]
        if not is_date_phrase(when):
            return None
        subject_phrase, how = m.group("s"), m.group("how") or m.group("how2")
    head = names.clean(subject_phrase)
    if not head or names.is_pronoun(head):
        return None
    change = bool(_PLAN_CHANGE.search(how)) or bool(_NOW.search(text))
    value = date_value(claim, when)
    if _is_bare(subject_phrase, sentence_initial=not agreed):
        if topic is None:
            return []
        anchor, thing = topic, f"{topic[:1].lower() + topic[1:] if not topic[:2].isupper() else topic} {head.lower()}"
    else:
        anchor, thing = head, head
    statement = f"The {thing} is scheduled for {value}."
    return [Assertion(ord=0, kind="observation", subject=anchor, statement=statement,
                      attribute=f"{head.lower()} date", value=value, change=change, window_applies=False)]


def _move(text: str, claim: dict, topic: str | None) -> list[Assertion] | None:
    m = _MOVE.match(text)
    if not m:
        return None
    target = _object_phrase(m.group("y"))
    if is_date_phrase(target):
        return None  # a plan moving to a date: `_plan` reads those
    subjects = _split_names(m.group("s"), True)
    if not subjects:
        return [] if (names.is_pronoun(m.group("s")) or _is_bare(m.group("s"), True)) else None
    obj = _entity_or_none(target)
    person = all(s[:1].isupper() and not re.match(r"^(?:The|A|An)\b", s) for s in subjects)
    teamish = obj is not None and (obj.split(" ")[-1].lower() in _TEAMISH or obj[:1].isupper())
    if obj is None or not person or not teamish:
        return [Assertion(ord=0, kind="observation", subject=s, statement=claim["claim_text"].strip())
                for s in subjects]
    previous = _entity_or_none(_object_phrase(m.group("x"))) if m.group("x") else None
    return [Assertion(ord=0, kind="relation", subject=s, predicate="works_on", object=obj,
                      statement=claim["claim_text"].strip(), change=True, ends=previous or "*")
            for s in subjects]


def _finite(match: re.Match, subject_phrase: str) -> bool:
    """A bare verb form ("review", "lead") is a verb only after an auxiliary, a negation, or a
    plural subject; otherwise it is probably a noun inside the subject ("the security review")."""
    verb = match.group("verb").lower()
    first = verb.split(" ")[0]
    if match.group(0).lower() != verb or " and " in f" {subject_phrase.lower()} ":
        return True  # an auxiliary or negation came first, or a compound subject
    return first.endswith(("s", "ed", "ing")) or first in _IRREGULAR_VERB_FORMS or \
        first in ("is", "are", "was", "were", "a", "an")


def _relations(text: str, claim: dict, topic: str | None) -> list[Assertion] | None:
    """Subject, verb from the table, object; clauses joined by "and" share the subject."""
    for m in _VERB_RE.finditer(text):
        if m.start() == 0:
            continue
        subject_phrase = text[:m.start()].strip().rstrip(",")
        if not _finite(m, subject_phrase):
            continue
        negated_subjects = _NEITHER.match(subject_phrase)
        if negated_subjects:
            subject_phrase = f"{negated_subjects.group(1)} and {negated_subjects.group(2)}"
        subjects = _split_names(subject_phrase, True)
        if subjects is None:
            if _is_bare(subject_phrase, True) and topic:
                return [Assertion(ord=0, kind="observation", subject=topic, statement=claim["claim_text"].strip())]
            if names.is_pronoun(subject_phrase) or _is_bare(subject_phrase, True) or \
                    subject_phrase.lower().startswith(("there ", "it ")):
                return []
            return None
        return _clauses(text[m.start():], subjects, claim, negate_all=bool(negated_subjects))
    return None


def _clauses(rest: str, subjects: list[str], claim: dict, negate_all: bool) -> list[Assertion] | None:
    out: list[Assertion] = []
    text = claim["claim_text"].strip()
    change = bool(_NOW.search(rest)) or bool(_STARTS.search(rest))
    # Each clause: "[aux] [not] verb object", split where "and" starts another verb clause.
    for clause in _CLAUSE_SPLIT.split(rest):
        cm = _VERB_RE.match(clause.strip())
        observe = [Assertion(ord=0, kind="observation", subject=s, statement=text) for s in subjects]
        if not cm:
            out += observe
            continue
        verb = cm.group("verb").lower()
        predicate, passive = _PREDICATE_OF[verb]
        target = _object_phrase(clause.strip()[cm.end():])
        if predicate == "works_on" and verb in _COPULA_ON:
            if is_date_phrase(target or "x"):
                return None
            if target.split(" ")[-1].lower() not in _TEAMISH:
                out += observe
                continue
        objects = None if is_date_phrase(target or "x") else _split_names(target)
        if not objects:
            out += observe
            continue
        negated = bool(cm.group("neg")) or negate_all
        for s in subjects:
            for o in objects:
                subj, obj = (o, s) if passive else (s, o)
                out.append(Assertion(ord=0, kind="relation", subject=subj, predicate=predicate, object=obj,
                                     statement=text, negated=negated, change=change or verb in _TAKEOVER))
    return dedupe(out)


def dedupe(found: list[Assertion]) -> list[Assertion]:
    """One assertion per (kind, names, predicate, negation, slot), first one kept."""
    seen, out = set(), []
    for a in found:
        k = (a.kind, names.key(a.subject), a.predicate, names.key(a.object or ""), a.negated, a.attribute)
        if k not in seen:
            seen.add(k)
            out.append(a)
    return out


def expand_first_names(document_names: set[str]) -> dict[str, str]:
    """Within one document, a lone first name that starts exactly one full name used in the same
    document means that person: {first-name key: full name}."""
    full = [n for n in document_names if len(n.split()) >= 2 and all(w[:1].isupper() for w in n.split())]
    out = {}
    for name in document_names:
        if len(name.split()) == 1:
            matches = [f for f in full if f.split()[0] == name]
            if len(matches) == 1:
                out[names.key(name)] = matches[0]
    return out


def version_topic(claims: list[dict]) -> str | None:
    """A version's topic: its opening's first line, else its title."""
    if not claims:
        return None
    first = claims[0]
    return names.topic_from_title(names.first_line(first.get("opening"))) or names.topic_from_title(first.get("title"))


def normalize_version(claims: list[dict], assertion_id) -> tuple[list[dict], list[dict]]:
    """Assertion rows and mention rows for the claims of one version, by the rules.

    `assertion_id(claim_id, ord)` names each assertion."""
    topic = version_topic(claims)
    return version_rows([(c, normalize_claim(c, topic)) for c in claims], assertion_id, VERSION)


# The heads of a software page's parts ("the name field", "the web console", "the memory tools"):
# what a reference page describes over and over is its surface, structure and not a thing its
# reader would look up as an entity.
_SURFACE_HEADS = frozenset("""field fields key keys value values parameter parameters argument arguments option
options setting settings flag flags score scores object objects function functions method methods class classes
endpoint endpoints console button buttons page pages tab tabs section sections file files folder folders tool
tools command commands variable variables property properties attribute attributes column columns response
responses request requests payload payloads interface""".split())


def recurring_things(subjects: set[str], texts: list[str]) -> frozenset[str]:
    """The subjects a document names as one definite thing in lower case more than once ("the
    invoice system", "the parallel run"): a thing it is about, not a phrase a sentence happened to
    open on ("the plugin includes"). Two words at least: a bare "the system" pins nothing."""
    found = set()
    for phrase in subjects:
        if len(phrase.split()) >= 2 and names.is_thing(phrase) and phrase.split()[-1] not in _SURFACE_HEADS:
            the = re.compile(rf"\bthe {re.escape(phrase)}\b", re.IGNORECASE)
            if sum(bool(the.search(t)) for t in texts) >= 2:
                found.add(phrase)
    return frozenset(found)


def proven_names(assertions: list[Assertion]) -> frozenset[str]:
    """The capitalised ends of a document's relations that only names take
    (`vocabulary.NAMED_SUBJECT`, `NAMED_OBJECT`): "Stripe" in "Ravi works for Stripe". The grammar
    nominates them; `names.is_name` still decides, with its vetoes of structure (code, markup,
    abbreviations of kinds, values), and only the test of English words is lifted."""
    found = set()
    for a in assertions:
        if a.kind != "relation":
            continue
        for end, typed in ((a.subject, vocabulary.NAMED_SUBJECT), (a.object, vocabulary.NAMED_OBJECT)):
            name = names.clean(end or "")
            if a.predicate in typed and name and all(w[:1].isupper() or w[:1].isdigit() or w in names.CONNECTORS
                                                     for w in name.split()):
                found.add(name)
    return frozenset(found)


def related_things(text: str, assertions: list[Assertion]) -> frozenset[str]:
    """The subjects of a claim's relations that are things its sentence sets as one, with a
    determiner, in two words or more ("The SSO integration blocks the Globex rollout"): in a note a
    relation is what pins such a thing, as a second mention does (`recurring_things`)."""
    return frozenset(
        a.subject for a in assertions
        if a.kind == "relation" and len(a.subject.split()) >= 2 and names.is_thing(a.subject)
        and re.search(rf"\b(?:{'|'.join(names.DETERMINERS)})\s+{re.escape(a.subject)}\b", text, re.IGNORECASE))


def named_only(assertions: list[Assertion], known: frozenset[str], common: frozenset[str],
               speakers: frozenset[str], topic: str | None = None, things: frozenset[str] = frozenset(),
               code: frozenset[str] = frozenset(), proven: frozenset[str] = frozenset(),
               relating: frozenset[str] = frozenset(), documentation: bool = True) -> list[Assertion]:
    """The assertions whose subjects are names (`names.is_name`), the document's topic or one of
    its recurring `things` ("the invoice system"), and whose other ends are such, or a thing the source
    names in lower case ("Priya owns data validation", `names.is_thing`): a relation to something
    that is none of these becomes an observation on its subject, an assertion about none of these
    is left out. A thing in `relating` (`related_things`) is a subject only of a relation whose
    other end is named. A capitalised phrase that is no name ("Use", "If you") is never a thing.
    In `documentation` only names are ends: a page's things in lower case ("the candidate pool",
    "the REST server") are parts of the software it describes, not what a reader looks up."""
    def named(phrase: str) -> bool:
        return phrase == topic or not documentation and names.is_thing(phrase) or names.is_name(
            phrase, known, common, speakers, code, proven, documentation)

    out = []
    for a in assertions:
        relates = a.kind == "relation" and a.subject in relating and named(a.object or "")
        if a.subject != topic and a.subject not in things and not relates \
                and not names.is_name(a.subject, known, common, speakers, code, proven, documentation):
            # a clause read as the subject ("Marco needs the new invoice layout"): its opening name
            found = names.names_in(a.subject, known, common, speakers, code, proven, documentation)
            if not found or not a.subject.startswith(found[0]) or a.kind != "observation":
                continue
            a = replace(a, subject=found[0])
        if a.kind == "relation" and not named(a.object or ""):
            a = replace(a, kind="observation", predicate=None, object=None, negated=False, change=False, ends=None)
        elif a.ends and a.ends != "*" and not named(a.ends):
            a = replace(a, ends="*")
        out.append(a)
    return [replace(a, ord=i) for i, a in enumerate(dedupe(out))]


def version_rows(found: list[tuple[dict, list[Assertion]]], assertion_id, normalizer: str
                 ) -> tuple[list[dict], list[dict]]:
    """Rows for one version's assertions, whichever backend read them: one document's claims
    together, so that a lone first name can borrow the full name the same document used, and so
    that an entity is a word the document uses as a name (or one who speaks in it)."""
    texts = [c["claim_text"] for c, _ in found if not _FIELD_ROW.match(c["claim_text"])]
    speakers = names.speakers_in(found[0][0].get("opening") if found else None)
    # The whole text, when the store gives it: the code it sets is no name, and a word its prose
    # writes in lower case ("embeddings", "user id") is a word, though no claim was made of it.
    whole = (found[0][0].get("version_text") or "") if found else ""
    # A page of documentation capitalises its headings' and features' words, and says what the
    # parts of its software do ("the embedding model uses …"): there a capitalised English word
    # needs more proof, and its things in lower case are no entities. All 114 mem0 pages read so (107 set
    # code, the rest open on front matter); a note or a conversation rarely does.
    documentation = names.is_documentation(whole)
    known, common = names.known_names(texts, speakers, documentation)
    code = names.code_words(whole)
    common = common | names.common_words([whole])
    topic = version_topic([c for c, _ in found]) if found else None
    things = frozenset() if documentation else recurring_things({a.subject for _, assertions in found
                                                                 for a in assertions}, texts)
    # a page of documentation proves its names wherever its prose writes them, in a sentence no
    # claim was made of too ("This guide … using LiveKit, Deepgram, OpenAI, and Mem0, focusing on
    # …"); a chat's lists are its claims' (an assistant's "Dealers, Auction Houses, …" prove nothing)
    written = [*texts, names.sentences_of(whole)] if documentation else texts
    proven = proven_names([a for _, assertions in found for a in assertions]) | names.bare_subjects(texts, common) \
        | names.spelled_out(texts) | names.commanded(written, whole)
    proven |= names.coordinated(written, lambda item: names.is_name(item, known, common, speakers, code, proven,
                                                                    documentation))
    found = [(c, named_only(assertions, known, common, speakers, topic, things, code, proven,
                            frozenset() if documentation else related_things(c["claim_text"], assertions),
                            documentation))
             for c, assertions in found]
    used = {n for _, assertions in found for a in assertions for n in (a.subject, a.object, a.ends) if n and n != "*"}
    expand = expand_first_names(used)

    def mention_key(name: str) -> str:
        k = names.key(name)
        return names.key(expand[k]) if k in expand else k

    planned = [(c, a, windows.for_assertion(c.get("valid_from"), c.get("valid_until"), c.get("precision") or "unknown",
                                           c.get("kind"), c.get("asserted_at"), applies=a.window_applies, change=a.change))
               for c, assertions in found for a in assertions]
    # A "now" in a document that dates exactly one change ("Ravi moved to the search team on
    # 1 June. Dana now leads billing.") reads as part of that change: it starts then.
    change_days = {w.valid_from for _, a, w in planned if a.change and w.source == "stated" and w.valid_from}
    if len(change_days) == 1:
        day = change_days.pop()
        planned = [(c, a, windows.Window(day, None, "open", "said_on")
                    if w.source == "said_on" and _NOW.search(c["claim_text"]) else w) for c, a, w in planned]
    rows, mentions = [], {}
    # Every name a claim uses is a mention, asserted about or not: "Gina lost their job at Door
    # Dash" names Door Dash, whatever the relation rules make of the sentence.
    named = [(claim, name) for claim, _ in found
             for name in names.names_in(claim["claim_text"], known, common, speakers, code, proven,
                                        documentation)]
    for claim, name in named:
        mentions.setdefault((mention_key(name), name), {
            "doc_id": claim["doc_id"], "mention_key": mention_key(name), "surface": name,
            "claim_id": claim["claim_id"], "asserted_at": claim.get("asserted_at")})
    for claim, a, window in planned:
        for name in (a.subject, a.object, a.ends):
            if name and name != "*":
                mentions.setdefault((mention_key(name), name), {
                    "doc_id": claim["doc_id"], "mention_key": mention_key(name), "surface": name,
                    "claim_id": claim["claim_id"], "asserted_at": claim.get("asserted_at")})
        rows.append({
            "assertion_id": assertion_id(claim["claim_id"], a.ord), "claim_id": claim["claim_id"],
            "doc_id": claim["doc_id"], "ord": a.ord, "kind": a.kind, "subject_key": mention_key(a.subject),
            "predicate": a.predicate, "object_key": mention_key(a.object) if a.object else None,
            "attribute": a.attribute, "value": a.value, "statement": a.statement, "negated": a.negated,
            "change": a.change, "ends_key": ("*" if a.ends == "*" else mention_key(a.ends)) if a.ends else None,
            "valid_from": window.valid_from, "valid_until": window.valid_until,
            "valid_precision": window.precision, "window_source": window.source,
            "asserted_at": claim.get("asserted_at"), "normalizer": normalizer})
    return rows, list(mentions.values())
