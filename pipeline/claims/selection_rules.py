"""Selection for the `rules` backend: a deterministic, cue-based judgement of every statement.

Each target passage gets exactly one outcome. The checks run in `RULE_ORDER`; the first that
fires decides:

1. `references_boilerplate`: the section is references or boilerplate, or the line is a
   citation, a bare URL or legal/page furniture.
2. `question`: it ends with "?", or a speaker's turn opens like a question.
3. `intro`: it introduces a section or a list ("This section covers", "The following:"), it
   is a table's header row, or it is a header line that frames the document ("Participants:",
   "Date:", a lone dateline).
4. `conclusion`: a wrap-up ("In summary", "Thanks, both.").
5. `no_info`: it says nothing is known ("we don't know yet", "TBD").
6. attributed stance → `keep`: a named holder with a stance verb ("Dana thinks ...",
   "According to Marco ..."), or a speaker's own "I think ..." — a claim about a stance, which
   Claimify makes attributed, whatever the stance is about.
7. `advice`, 8. `hypothetical`.
9. `opinion`: evaluative or impression wording with no holder. A speaker holds what they say,
   so a turn's opinion is kept; a stance word that only wraps a date or a quantity ("I think
   it is 40 places") is kept flagged, since the quantity is the assertion.
10. `generic`: a truism with a bare plural or abstract subject, no name, number or date.
11. `ambiguous`: a bare pronoun subject with no antecedent in any earlier passage of the
    context, or a fragment of under four words with no name or number (a bare assent such as
    "Agreed." included: what it answers is in another turn, which the rules cannot attach).
12. `keep_flagged`: hedged statements ("probably", "might", "should be done by Friday") and very
    short statements that still carry a name or a number.
13. `keep`.

Every cue list is named below with a line on why; `DROP_CUES` maps each drop reason to its
patterns so each reason can be checked on its own. Neighbour passages are context only: they
are never judged, but they can supply an antecedent or make a sentence-initial word a name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.claims.extraction import (
    ChunkContext,
    Outcome,
    Passage,
    Selected,
    SelectionResult,
)
from pipeline.claims.segment import CALENDAR_WORDS
from pipeline.claims.selection_turns import QUESTION_OPENERS, judge_turn, participants_of, told_before_request

RULE_ORDER = ("references_boilerplate", "question", "intro", "conclusion", "no_info",
              "attributed", "advice", "hypothetical", "opinion", "generic", "ambiguous",
              "keep_flagged", "keep")

# Sections whose every line cites or is legal text (pipeline.structure roles).
DROP_SECTION_ROLES = ("references", "boilerplate")


def _cues(*patterns: str, flags: int = re.IGNORECASE) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, flags) for pattern in patterns)


# Lines that point at other works or are page furniture: they say nothing about the subject.
REFERENCE_CUES = _cues(
    r"^<?https?://\S+>?[.\s]*$",                                   # a bare URL
    r"^\[[^\]]*\]\(\S+\)[.\s]*$",                                   # a bare Markdown link
    r"^(?:see|source|sources|via|link|more at|available at)\s*:?\s*<?https?://\S+>?\.?$",
    r"\bdoi:\s*10\.\d{4,}|\bdoi\.org/10\.|\barXiv:\s*\d{4}\.\d{4,5}",
    r"\bISBN(?:-1[03])?:?\s*[\d\-X]{10,}",
    r"\bretrieved (?:from|on)\b",
    r"\bet al\.,?\s*\(?(?:1[89]|20)\d{2}",
    r"\ball rights reserved\b|©|\(c\)\s*(?:1[89]|20)\d{2}|^copyright\b",
    r"\bconfidential(?:ity)? notice\b|\bthis (?:e-?mail|message) and any attachments\b",
    r"^page \d+(?: of \d+)?$",
) + (re.compile(r"^[A-Z][A-Za-z'’\-]+,\s+(?:[A-Z]\.\s*)+.*\b(?:1[89]|20)\d{2}"),)  # Doe, J. (2020)
# Code, command lines, configuration and markup are structure: chunked and searchable, never a
# claim (the seed's references_boilerplate). A statement is code when it opens like a line of a
# program or a shell, reads like one (a call with arguments, an arrow, a brace or a semicolon at
# its end, an assignment), or is mostly inline code; it is markup when it opens on a tag.
CODE_CUES = (
    re.compile(r"^(?:import|from\s+[\w.]+\s+import|def|class|async|await|return|const|let|var|function|"
               r"export|except|raise|elif|yield|lambda|public|private|static|void|package|using|\$|#!|>>>|"
               r"curl|pip|pip3|npm|npx|pnpm|yarn|docker|git|brew|uv|python|python3|node|cd|mkdir|export)\b"),
    re.compile(r"^(?:@\w+|[{}\]\[)(]|</?[A-Za-z][\w.:-]*(?:[\s/>]|$))"),
    re.compile(r"\w\([^()]*\w=|->|=>|:=|==|!=|\+=|[{};]\s*$|\)\s*[:{]\s*$|^\w+\s*=\s*\S|\w\.\w+\([^)]*\)"),
)
_INLINE_CODE = re.compile(r"`[^`]+`")
# a statement whose text is more than this share of inline code is a line of code
INLINE_CODE_SHARE = 0.4


def is_code(text: str) -> bool:
    """Whether a statement (as written, backticks included) is code or markup rather than prose."""
    prose = _INLINE_CODE.sub(" ", text)
    if any(cue.search(prose.strip()) for cue in CODE_CUES):
        return True
    return sum(len(m.group()) for m in _INLINE_CODE.finditer(text)) > INLINE_CODE_SHARE * len(text.strip())


# Datelines and bylines say when and by whom the document was written, which is its said-on time
# and author, never a statement about the world ("Written on 4 March 2026." is neither a claim nor
# an entity named "Written").
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (rf"(?i:(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+)?(?:{_DAY}\s+{_MONTH},?\s+\d{{4}}|"
         rf"{_MONTH}\s+{_DAY},?\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}})"
         r"(?:,?\s+(?:at\s+)?\d{1,2}[:.]\d{2}(?::\d{2})?\s*(?:am|pm|utc|gmt|z)?)?)")
_AUTHORS = r"[A-Z][\w'’\-]+(?:\s+(?:[A-Z][\w'’\-]+|and|&)|,\s+[A-Z][\w'’\-]+){0,6}"
DATELINE_CUES = (
    re.compile(rf"^(?i:written|posted|published|updated|last updated|last modified|modified|created|dated|sent|"
               rf"issued|filed)(?:\s+(?i:on|at))?\s*:?\s*{_DATE}(?:\s+by\s+{_AUTHORS})?\.?$"),
    re.compile(rf"^(?i:(?:written|posted|published) by|by|authors?\s*:)\s+{_AUTHORS}"
               rf"(?:,?\s+(?:(?i:on)\s+)?{_DATE})?\.?$"),
)
# Questions that end without "?" are only trusted in a speaker's turn, where "Will" or "May"
# opening a sentence is far likelier to ask than to name someone.
QUESTION_CUES = _cues(r"\?[\"'”’)\]]*$")
TURN_QUESTION_CUES = _cues(
    r"^(?:[A-Z][a-z]+,\s+)?(?:" + "|".join(QUESTION_OPENERS) + r")\b[^.!]*$",
    r"^(?:i wonder (?:whether|if)|does anyone know|any (?:news|update|updates) on)\b",
    r"^(?:\w+,\s+)?(?:any|anything|anyone|anybody)\b[^.!]*$",
)
# Sentences about the document rather than about the world, and lead-ins to a list.
_TIME_AFTER_FOLLOWING = (r"(?:day|week|weekend|month|quarter|year|morning|afternoon|evening|"
                         r"night|monday|tuesday|wednesday|thursday|friday|saturday|sunday)")
INTRO_CUES = _cues(
    r"^(?:this|the present|our)\s+(?:section|document|note|notes|page|report|chapter|memo|"
    r"e-?mail|post|guide|doc|summary|presentation|deck|slide|paper|article|update|part|table)\s+"
    r"(?:describes|covers|summari[sz]es|outlines|explains|presents|lists|contains|gives|"
    r"provides|sets out|documents|is about|introduces|discusses|reviews|records|captures|shows)\b",
    r"^below,?\s+(?:we|you|is|are|you'll|we'll|i)\b",
    rf"^the following\b(?!\s+{_TIME_AFTER_FOLLOWING}\b)",
    r"^here (?:is|are)\b",
    r"^in this (?:section|document|note|report|chapter|memo|post|guide|update|page)\b",
    r":$",
    # Header lines (who attended, the date) frame the document; Claimify reads them as context.
    r"^(?:participants|attendees|present|date|author|written by)\s*:",
    r"^(?:\d{1,2} [A-Z][a-z]+,? \d{4}|[A-Z][a-z]+ \d{1,2},? \d{4}|\d{4}-\d{2}-\d{2})\.?$",
)
# Wrap-ups of a section or a meeting: they close, they do not assert.
CONCLUSION_CUES = _cues(
    r"^(?:in summary|to summari[sz]e|in conclusion|to conclude|to sum up|in short|all in all|"
    r"that's all|that is all|that's it|that wraps|wrapping up|see you|talk soon|"
    r"same time (?:tomorrow|next week))\b",
    r"^overall,",
    r"^(?:thanks|thank you|cheers)(?:,?\s+(?:everyone|all|both|team|folks|so much))?[.!]*$",
)
# Statements whose content is that nothing is known. Not knowing is in the present: "since I
# didn't know I had it" tells of the past and says what happened.
NO_INFO_CUES = _cues(
    r"\b(?:we|i|they|nobody|no one|you)\s+(?:still\s+)?(?:don't|do not|can't|cannot)\s+(?:yet\s+)?know\b",
    r"\bnot (?:yet |currently )?known\b",
    r"\b(?:is|are|was|were|remains?|still)\s+(?:still\s+)?(?:unknown|unclear)\b",
    r"^(?:it'?s|it is)\s+(?:still\s+)?(?:unknown|unclear)\b",
    r"\bTBD\b|\bTBC\b|\bto be (?:decided|determined|confirmed|announced)\b",
    r"\bno (?:update|updates|news)\b",
    r"\bnothing (?:new )?to report\b",
)
# A named holder and a stance verb: the statement is about the holder's view.
_HOLDER = r"(?P<holder>[A-Z][A-Za-z'’\-]*[a-z][A-Za-z'’\-]*(?:\s+[A-Z][A-Za-z'’\-]*[a-z]\w*)?)"
STANCE_VERBS = (
    "thinks", "thought", "believes", "believed", "feels", "felt", "argues", "argued", "says",
    "said", "suggests", "suggested", "recommends", "recommended", "expects", "expected",
    "worries", "worried", "fears", "feared", "hopes", "hoped", "prefers", "preferred", "wants",
    "wanted", "doubts", "doubted", "claims", "claimed", "considers", "considered", "estimates",
    "estimated", "insists", "insisted", "proposes", "proposed", "agrees", "agreed", "disagrees",
    "disagreed", "reckons", "reckoned", "warns", "warned", "is worried", "is confident",
    "is concerned", "is sure", "is convinced",
)
HOLDER_CUES = (
    re.compile(rf"\b{_HOLDER}\s+(?:(?:also|still|now|strongly|firmly|clearly)\s+)?"
               rf"(?:{'|'.join(STANCE_VERBS)})\b"),
    re.compile(rf"\baccording to {_HOLDER}"),
    re.compile(rf"\bin {_HOLDER}['’]s? (?:view|opinion|words)\b"),
)
# A speaker's own stance: the turn's speaker is the holder.
FIRST_PERSON_STANCE_CUES = _cues(
    r"\b(?:I|we)\s+(?:(?:really|still|also|honestly|personally|strongly|do)\s+)?(?:think|"
    r"believe|feel|guess|suspect|reckon|expect|doubt|prefer|like|love|hate|worry|hope|agree|"
    r"disagree)\b",
    r"\b(?:I|we)(?:\s+am|'m|\s+are|'re)\s+(?:not\s+)?(?:sure|worried|confident|concerned|"
    r"convinced)\b",
    r"\bin my (?:view|opinion)\b|\bpersonally\b|\bIMO\b|\bIMHO\b",
)
# Recommendations and instructions addressed to the reader.
_CARE_CUES = _cues(r"\b(?:make sure|remember to|don't forget to|do not forget to|be sure to|be careful to)\b")
ADVICE_CUES = _cues(
    r"\b(?:you|we|everyone|one|teams?)\s+(?:really\s+)?(?:should|ought to|had better)\b",
    r"\b(?:we|i)\s+(?:would\s+|'d\s+)?(?:recommend|suggest|advise)\b",
    r"\bit(?:'s| is) (?:best|wise|advisable|a good idea|better) to\b",
    r"^(?:always|never|consider|avoid|be sure|try to|please)\b",
) + _CARE_CUES
# In a turn, "make sure" that the speaker governs is their own plan, not advice to anyone: "I'll
# make sure to book the rooms early", "I want to make sure I'm prepared", "I should probably make
# sure to invite David, they just had a baby boy".
_OWN_CARE = re.compile(r"\bI(?:['’](?:ll|m|d)|\s+(?:will|want|wanted|need|needed|should|have|had|am|was|just))\b"
                       r"(?:\s+(?:to|also|really|probably|definitely|just|going))*\s+(?:make sure|remember to|be sure to)\b")
# Things that did not happen and may not: conditions with a modal, counterfactuals.
HYPOTHETICAL_CUES = _cues(
    r"\bif\b[^.?!]*\b(?:would|could|might)\b",
    r"\b(?:would|could|might)\b[^.?!]*\bif\b",
    r"\b(?:would|could|might|should) have\b",
    r"\bin case\b",
    r"\bsuppos(?:e|ing)\b",
    r"\bimagine\b",
    r"\bwere to\b",
    r"\bhypothetical(?:ly)?\b",
    r"\bwhat if\b",
)
# Evaluative words: a judgement, not a checkable assertion.
EVALUATIVE_CUES = _cues(
    r"\b(?:cleaner|cleanest|better|best|worse|worst|great|nice|nicer|ugly|terrible|awful|"
    r"excellent|amazing|elegant|messy|horrible|fantastic|wonderful|brilliant|annoying|"
    r"beautiful|pointless|silly|stupid|overkill|overrated|disappointing|impressive|painful)\b",
    r"\b(?:good|bad) (?:idea|approach|choice|call|plan|option)\b",
    r"\btoo\s+(?!many\b|much\b|few\b|late\b|early\b)[a-z]{3,}\b",
    r"\bI (?:like|love|hate|dislike|enjoy)\b",
)
# Impressions and stance words without a holder: an opinion unless they wrap a date or number.
IMPRESSION_CUES = _cues(
    r"\bseems?\b|\bseemed\b|\blooks like\b|\bfeels like\b",
    r"\bI (?:think|believe|feel|guess|suspect|reckon)\b",
    r"\bin my (?:view|opinion)\b|\bpersonally\b|\bIMO\b|\bIMHO\b",
)
# Hedges on a factual statement: kept, but flagged as borderline.
HEDGE_CUES = (
    *_cues(r"\b(?:probably|likely|unlikely|possibly|perhaps|maybe|hopefully|tentatively|"
           r"presumably|might|could|should|would|expected to|supposed to|roughly|about to)\b"),
    re.compile(r"\bmay\b"),  # lower case only: "May" is a month
)
# A truism: a bare plural or abstract subject, a generic verb, and a generic predicate.
GENERIC_VERBS = frozenset({
    "is", "are", "take", "takes", "need", "needs", "require", "requires", "can", "cause",
    "causes", "tend", "tends", "matter", "matters", "help", "helps", "save", "saves", "make",
    "makes", "fail", "breaks", "break", "go", "goes", "cost", "costs", "improve", "improves",
})
GENERIC_PREDICATES = frozenset({
    "risky", "hard", "difficult", "easy", "expensive", "costly", "slow", "fast", "important",
    "essential", "necessary", "critical", "crucial", "useful", "valuable", "dangerous",
    "complex", "complicated", "tricky", "time", "effort", "care", "planning", "attention",
    "maintenance", "money", "backups", "testing", "wrong", "unpredictable", "inevitable",
    "common", "rare", "painful", "matter", "matters", "fail", "everything", "quality", "trust",
    "communication", "mistakes", "errors", "bugs", "problems", "delays",
})
_ABSTRACT_SUFFIXES = ("ing", "ion", "ity", "ment", "ness", "ance", "ence", "ure", "ism", "ics")
_GENERIC_QUANTIFIERS = frozenset({"all", "most", "many", "every", "each", "any", "a", "an"})
# Subjects that need something earlier to point at.
PRONOUN_SUBJECTS = frozenset({"it", "they", "he", "she"})
DEMONSTRATIVE_SUBJECTS = frozenset({"this", "that", "these", "those"})
_VERB_AFTER_DEMONSTRATIVE = frozenset({
    "is", "was", "are", "were", "will", "would", "has", "had", "have", "can", "could",
    "should", "must", "may", "might", "did", "does", "do", "means", "meant", "needs", "got",
    "gets", "went", "goes", "happened", "changed", "moved", "slipped", "broke", "works",
})
_PERSONAL_PRONOUNS = frozenset({"he", "she"})
SHORT_WORDS = 4  # statements with fewer words are short

# Capitalised words that start sentences without naming anyone.
COMMON_CAPITALISED = frozenset({
    "the", "a", "an", "this", "that", "these", "those", "it", "its", "i", "we", "you", "he",
    "she", "they", "our", "my", "your", "his", "her", "their", "there", "here", "in", "on",
    "at", "by", "for", "from", "to", "of", "with", "without", "after", "before", "during",
    "since", "until", "if", "when", "while", "where", "what", "who", "why", "how", "which",
    "and", "but", "or", "so", "yes", "no", "not", "also", "then", "now", "each", "every",
    "all", "some", "most", "many", "any", "one", "two", "three", "please", "thanks", "thank",
    "ok", "okay", "sure", "agreed", "done", "same", "next", "last", "first", "second", "short",
    "overall", "finally", "however", "meanwhile", "both", "neither", "either", "let", "let's",
    "note", "action", "actions", "decision", "decisions", "owner", "date", "participants",
    "attendees", "present", "summary", "status", "update", "according", "written", "version",
    "maintained", "page", "always", "never", "consider", "avoid", "be", "make", "remember",
    "suppose", "imagine", "although", "because", "as", "once", "only", "just",
    "still", "yet", "again", "other", "another", "such", "very", "more", "less", "few",
    "several", "soon", "later", "earlier", "today", "tomorrow", "yesterday", "tonight", "do",
    "does", "did", "is", "are", "was", "were", "will", "would", "can", "could", "should",
    "may", "might", "must", "has", "have", "had", "new", "old",
} | CALENDAR_WORDS)
_NUMBER_WORDS = frozenset({
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "twenty", "thirty", "forty", "fifty",
    "hundred", "thousand", "million", "billion", "half", "dozen", "once", "twice",
})
_DATE = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec|Monday|Tuesday|Wednesday|Thursday|"
    r"Friday|Saturday|Sunday)\b|\b(?:today|tomorrow|yesterday|tonight)\b|\bQ[1-4]\b|"
    r"\b(?:next|last|this) (?:week|month|quarter|year)\b", re.IGNORECASE)
_NAME_TOKEN = re.compile(r"[A-ZÀ-ÖØ-Þ][A-Za-zÀ-ÖØ-öø-ÿ'’\-]*[a-zß-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ'’\-]*")
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"[*_`~]+")
# Where a sentence starts inside a passage's plain text (table cells become "; "-separated).
_SENTENCE_BREAK = re.compile(r"[.!?;]\s+")
_NAME_RUN = re.compile(rf"{_NAME_TOKEN.pattern}(?:\s+{_NAME_TOKEN.pattern})*")
# A sentence-initial word followed by a third-person verb, "is the" or "and <Name>" reads as a
# name.
_THIRD_PERSON_NAME = re.compile(
    r"^[A-Z]\w+\s+(?:(?!(?:is|was|as|does|this|thus|always|perhaps|unless|its|his)\b)"
    r"[a-z]*[a-rt-z]s\b|has\b|(?:is|was) (?:the|a|an)\b|and [A-Z])")

# The drop reasons decided by cue patterns. `generic` and `ambiguous` are decided by the shape
# of the sentence instead (GENERIC_VERBS / GENERIC_PREDICATES; PRONOUN_SUBJECTS and
# DEMONSTRATIVE_SUBJECTS against the earlier passages).
DROP_CUES: dict[str, tuple[re.Pattern[str], ...]] = {
    "references_boilerplate": REFERENCE_CUES + DATELINE_CUES,
    "question": QUESTION_CUES + TURN_QUESTION_CUES,
    "intro": INTRO_CUES,
    "conclusion": CONCLUSION_CUES,
    "no_info": NO_INFO_CUES,
    "advice": ADVICE_CUES,
    "hypothetical": HYPOTHETICAL_CUES,
    "opinion": EVALUATIVE_CUES + IMPRESSION_CUES,
}


@dataclass(frozen=True)
class Vocabulary:
    """What the whole context (header, title, every passage) says about its words."""

    names: frozenset[str] = frozenset()      # used as names: mid-sentence, or as speakers
    lowercase: frozenset[str] = frozenset()  # words that also occur in lower case: common words
    speakers: frozenset[str] = frozenset()   # who takes turns, or the header's participants

    @classmethod
    def of(cls, ctx: ChunkContext) -> Vocabulary:
        texts = [*ctx.header.splitlines(), ctx.title, *(p.text for p in ctx.passages)]
        lowercase = frozenset(w for text in texts for w in _WORD.findall(text) if w.islower())
        partial = cls(frozenset(), lowercase)
        speakers = {p.speaker for p in ctx.passages if p.speaker} | set(participants_of(ctx.header))
        names = set(speakers)
        for text in texts:
            names.update(_names(plain(text), partial))
        return cls(frozenset(names), lowercase, frozenset(speakers))


def select_rules(ctx: ChunkContext) -> SelectionResult:
    """One `Selected` per target passage, in order, and the names the target introduces."""
    vocabulary = Vocabulary.of(ctx)
    statements = []
    for index, passage in enumerate(ctx.passages):
        if passage.in_target:
            outcome, reason = judge(passage, ctx.passages[:index], ctx.section_role, vocabulary)
            statements.append(Selected(passage.label, outcome, reason))
    return SelectionResult(tuple(statements), introduced_names(ctx, vocabulary))


def judge(passage: Passage, earlier: Sequence[Passage], section_role: str,
          vocabulary: Vocabulary = Vocabulary()) -> tuple[Outcome, str | None]:
    """(outcome, reason) for one passage, given the passages before it in the context; the
    first rule of `RULE_ORDER` that fires decides."""
    text = plain(passage.text)
    if passage.speaker:
        text = told_before_request(text)
    row = passage.text.lstrip().startswith("|")
    previous = earlier[-1] if earlier else None
    if section_role in DROP_SECTION_ROLES or _any(DROP_CUES["references_boilerplate"], text) \
            or (not passage.speaker and is_code(passage.text)):
        return "drop", "references_boilerplate"
    if _any(QUESTION_CUES, text) or (passage.speaker and _any(TURN_QUESTION_CUES, text)):
        return "drop", "question"
    if passage.speaker:
        decided = judge_turn(text, passage.speaker, vocabulary.speakers | {passage.speaker}, vocabulary.names)
        if decided is not None:
            return decided
    header_row = row and (previous is None or not previous.text.lstrip().startswith("|"))
    if _any(INTRO_CUES, text) or header_row:
        return "drop", "intro"
    if _any(CONCLUSION_CUES, text):
        return "drop", "conclusion"
    if _any(NO_INFO_CUES, text):
        return "drop", "no_info"
    if _has_named_holder(text) or (passage.speaker and _any(FIRST_PERSON_STANCE_CUES, text)):
        return "keep", None
    if _is_advice(text, bool(passage.speaker)):
        return "drop", "advice"
    if _any(HYPOTHETICAL_CUES, text):
        return "drop", "hypothetical"
    evaluative, impression = _any(EVALUATIVE_CUES, text), _any(IMPRESSION_CUES, text)
    if (evaluative or impression) and not passage.speaker:
        # A quantity (or, behind a mere impression, a date) is the assertion the wording wraps.
        if _has_number(text) or (impression and not evaluative and _DATE.search(text)):
            return "keep_flagged", "opinion-phrased"
        return "drop", "opinion"
    if not row and _is_generic(text, vocabulary):
        return "drop", "generic"
    words = _WORD.findall(text)
    pointing = _points_back(words)
    if not row and pointing and _lacks_antecedent(words[0].lower(), earlier):
        return "drop", "ambiguous"
    short = len(words) < SHORT_WORDS and not row
    anchored = bool(_names(text, vocabulary) or _has_number(text))
    if short and not (anchored or pointing):
        # "Great stuff.", "Yes.": what it is about, or what it answers, is left to context,
        # and the rules cannot attach it.
        return "drop", "ambiguous"
    if _any(HEDGE_CUES, text):
        return "keep_flagged", "hedged"
    if short and anchored:
        return "keep_flagged", "short"
    return "keep", None


def _is_advice(text: str, in_turn: bool) -> bool:
    fired = [p for p in ADVICE_CUES if p.search(text)]
    if in_turn and fired and all(p in _CARE_CUES for p in fired) and _OWN_CARE.search(text):
        return False   # the speaker's own "I'll make sure to ..."
    return bool(fired)


def introduced_names(ctx: ChunkContext, vocabulary: Vocabulary | None = None
                     ) -> tuple[tuple[str, str], ...]:
    """(name, label) for each person, organisation, project or work the target passages name,
    once per chunk, with the label of the first target passage that names it; a speaker counts
    as named by their turn."""
    vocabulary = Vocabulary.of(ctx) if vocabulary is None else vocabulary
    seen: dict[str, str] = {}
    for passage in ctx.target:
        speakers = [passage.speaker] if passage.speaker else []
        for name in speakers + _names(plain(passage.text), vocabulary):
            seen.setdefault(name, passage.label)
    return tuple(seen.items())


def plain(text: str) -> str:
    """Passage text without Markdown markup, table pipes or runs of whitespace."""
    text = _LINK.sub(r"\1", text)
    text = _MARKUP.sub("", text)
    text = text.strip().strip("|").replace("|", ";")
    return " ".join(text.split())


def _any(patterns: Sequence[re.Pattern[str]], text: str) -> bool:
    return any(pattern.search(text) for pattern in patterns)


def _has_named_holder(text: str) -> bool:
    for pattern in HOLDER_CUES:
        for match in pattern.finditer(text):
            if match.group("holder").split()[0].lower() not in COMMON_CAPITALISED:
                return True
    return False


def _has_number(text: str) -> bool:
    return any(c.isdigit() for c in text) or any(
        word.lower() in _NUMBER_WORDS for word in _WORD.findall(text))


def _names(text: str, vocabulary: Vocabulary) -> list[str]:
    """Names in `text`, in order: runs of capitalised words that are not common sentence
    starters. A sentence-initial one counts only when the context uses it as a name elsewhere,
    or when it reads like one ("Ravi owns ...", "Marco is the ...") and the context never
    writes it in lower case."""
    names: list[str] = []
    starts = {0} | {m.end() for m in _SENTENCE_BREAK.finditer(text)}
    for match in _NAME_RUN.finditer(text):
        words = match.group().split()
        at_start = match.start() in starts
        while words and words[0].lower() in COMMON_CAPITALISED:
            words.pop(0)
            at_start = False  # what follows a capitalised common word is mid-sentence
        if not words:
            continue
        name = re.sub(r"['’]s$", "", " ".join(words))
        if at_start and len(words) == 1 and name not in vocabulary.names:
            reads_as_name = (_THIRD_PERSON_NAME.match(text, match.start()) is not None
                             and not name.lower().endswith(_ABSTRACT_SUFFIXES))
            if not reads_as_name or name.lower() in vocabulary.lowercase:
                continue
        if name not in names:
            names.append(name)
    return names


def _is_generic(text: str, vocabulary: Vocabulary) -> bool:
    words = _WORD.findall(text)
    if len(words) < 2 or _has_number(text) or _DATE.search(text):
        return False
    if words[0] in vocabulary.names or any(n != words[0] for n in _names(text, vocabulary)):
        return False
    verb = next((i for i in range(1, min(4, len(words))) if words[i].lower() in GENERIC_VERBS),
                None)
    if verb is None:
        return False
    subject = [w.lower() for w in words[:verb]]
    if subject[0] in COMMON_CAPITALISED and subject[0] not in _GENERIC_QUANTIFIERS:
        return False
    head = subject[-1]
    bare_plural = head.endswith("s") and not head.endswith("ss")
    if not (bare_plural or head.endswith(_ABSTRACT_SUFFIXES) or subject[0] in _GENERIC_QUANTIFIERS):
        return False
    return any(w.lower() in GENERIC_PREDICATES for w in words[verb:])


def _points_back(words: list[str]) -> bool:
    """Whether the subject is a bare pronoun or a demonstrative standing alone ("This was ...")."""
    if not words:
        return False
    first = words[0].lower()
    if first in DEMONSTRATIVE_SUBJECTS:
        return len(words) > 1 and words[1].lower() in _VERB_AFTER_DEMONSTRATIVE
    return first in PRONOUN_SUBJECTS


def _lacks_antecedent(first: str, earlier: Sequence[Passage]) -> bool:
    """Whether no earlier passage offers something for `first` to point at: a person (or a
    speaker) for "he"/"she", any content word for "it", "they" and demonstratives."""
    for passage in earlier:
        if first in _PERSONAL_PRONOUNS:
            # Any capitalised word that is not a common one may be the person, even a
            # sentence-initial one ("Dana reviewed the plan. She signed off.").
            if passage.speaker or any(w.lower() not in COMMON_CAPITALISED
                                      for w in _NAME_TOKEN.findall(plain(passage.text))):
                return False
        elif any(len(w) > 2 and w.lower() not in COMMON_CAPITALISED
                 for w in _WORD.findall(plain(passage.text))):
            return False
    return True
