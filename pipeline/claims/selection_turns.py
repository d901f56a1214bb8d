"""Selection for conversation turns: what a listener would note, and the talk around it.

A sentence of a turn is judged by what it does in the conversation before what it says. The
seed's drop reasons, applied to chat:

- `no_info`: greetings, farewells, thanks, acknowledgements and reactions to what the other
  person said ("Hey Nate!", "Thanks, Maria!", "Sounds good.", "Wow, that's awesome!"): once the
  interjections and the names being addressed are off, nothing is asserted about the world;
- `advice`: encouragement and instructions addressed to the listener ("You got this!", "Keep
  pushing!", "Take lots of pics!", "I'm so proud of you");
- `opinion`: an evaluation of the listener or of what they shared ("You're so talented",
  "That picture shows a lot of joy"), which holds nothing a reader would look up later;
- `generic`: a truism with no one in it ("Family's love really grounds us", "Kickboxing is a
  perfect way to stay in shape").

What is kept: what the speaker says of themselves (events, states, plans, preferences,
possessions, relationships, their own stance) and what they say of named or definite others
("My sister adopted a puppy", "The class starts in June"). Questions are dropped before these
rules run (`selection_rules.judge`).

Why rules and not a model: the rules backend loads no weights, and these speech acts have
closed, short surface forms in English chat; every cue list below says what it catches.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from pipeline.claims.extraction import Outcome

# Words that open or pad a turn without asserting anything ("Wow, John, ...", "Yeah! ...").
INTERJECTIONS = frozenset("""
wow woah whoa woohoo yay yeah yea yes yep yup yess nope no nah oh ooh ah aw aww awww hey hi hello hiya
haha hahaha lol lmao omg gosh geez hmm hm um uh ok okay alright right sure cool nice great awesome
amazing sweet neat wonderful fantastic perfect exactly totally absolutely definitely indeed true
well so anyway anyways btw ugh phew oops whew dude man wowza yikes huh hooray congrats congratulations
thanks thank thx ty cheers bye goodbye also
""".split())
# Greetings, farewells and small talk about the conversation itself.
GREETING_CUES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"^(?:good\s+)?(?:morning|afternoon|evening|night)\b",
    r"\blong time no (?:see|talk|chat)\b",
    r"\b(?:good|great|nice|lovely|so good) (?:to|2) (?:see|hear from|talk to|chat with|catch up with) you\b",
    r"\b(?:nice|great|good) (?:to )?(?:meet|meeting|chatting|talking|catching up)\b",
    r"\b(?:haven't|have not|hasn't been|been a (?:while|bit|few \w+)) (?:talked|chatted|spoken|since)\b",
    r"^(?:it'?s )?been (?:a while|ages|forever|too long|a (?:few|couple(?: of)?) (?:days|weeks|months))\b",
    r"\bwhat'?s up\b|\bhow'?s it going\b|\bhow are you\b|\bhow have you been\b",
    r"^(?:see|talk to|catch|chat with) (?:you|ya|u)\b|\b(?:talk|chat|speak) (?:to you )?(?:soon|later)\b",
    r"^(?:take care|bye|goodbye|later|see ya|cya|catch you later|until next time)\b",
    r"^(?:good ?night|have a good (?:one|night|day))\b",
))
# Thanks and acknowledgements: they answer another turn and assert nothing of their own.
ACKNOWLEDGEMENT_CUES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"^(?:thanks|thank you|thank u|thx|ty|many thanks|appreciate (?:it|that|the|your|you)|i appreciate\b)",
    r"^(?:no problem|no worries|no prob|you'?re welcome|anytime|my pleasure|of course|sure thing|for sure)\b",
    r"^(?:sounds|that sounds|seems|looks) (?:good|great|like a plan|fun|awesome|amazing|cool|nice|lovely|perfect)\b",
    r"^(?:got it|will do|i will|i'll do that|i'll try|i know,? right|me too|same here|same|totally agree|"
    r"i agree|agreed|i couldn'?t agree more|couldn'?t agree more|exactly|you bet|definitely|i hear you|"
    r"i understand|i get it|i see|makes sense|that makes sense|fair enough|good (?:point|idea|call|question))"
    r"(?:\s+with you)?[\s.!]*$",
    r"\b(?:your|the) (?:support|encouragement|kind words|help|advice|friendship|words) (?:means?|meant|mean) "
    r"(?:a lot|so much|the world|everything)\b",
    r"^(?:yes|yeah|no|nope|sure|okay|ok)[.!]*$",
    r"^i (?:think|hope|guess|believe|suppose|reckon|doubt|know|feel) (?:so|it|that)(?: too| as well)?[\s.!]*$",
    r"^(?:i'?m|i am) (?:so |really |very |super |also |just |totally )*(?:excited|thrilled|pumped|happy|glad|"
    r"stoked|eager|curious|sorry|proud|grateful|thankful) (?:for you|to (?:see|hear|know|learn|read|watch|try) "
    r"(?:how|what|it|that|this|your|you|more|all|about))",
    r"^i can'?t wait (?:to (?:see|hear|read|watch|try|check) (?:it|that|this|your|you|how|what|more|them))",
    r"^(?:i'?m|i am) (?:\w+ )?(?:glad|sure|certain|positive|confident) (?:you|your|that you|it'?ll|it will|"
    r"they'?ll|they will|it was|that was)\b",
    r"^i (?:really |truly |totally )?(?:appreciate|bet|can imagine|can tell)\b",
    r"^i'?ll (?:definitely |have to |totally |surely |probably |try to |make sure to )?(?:see you|talk to you|"
    r"catch you|check (?:it|that|them|this) out|look into (?:it|that)|keep (?:that|it) in mind|try (?:it|that)|"
    r"give it a (?:try|shot|go)|let you know|keep you (?:posted|updated)|think about it)\b",
    r"^i (?:won'?t|will never|will not) (?:give up|let you down|stop)\b",
    r"^(?:who knows|you never know|you know what they say)\b",
    r"^(?:check (?:this|it|these|that) out|check out (?:this|these|that|my|the)|take a look|look at (?:this|these|that))\b",
    r"^i'?m sure (?:it'?s|its|it was|that'?s|you)\b",
    r"^(?:it |that )?(?:sounds|looks|seems) like (?:you|your|it|that|a|an|so|such|the)\b",
))
# Reactions to what the other person shared ("That's awesome!", "I bet"): talk about the talk,
# unless the sentence also says something of the speaker, of someone named, or of a time.
REACTION_CUES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"^(?:i'?m |i am |so )?(?:glad|happy|thrilled|sorry|excited|stoked) (?:to hear|you|for you|that you|"
    r"it|we|i could|i can|to see|to know)\b",
    r"^(?:what a|how (?:cool|nice|fun|awesome|great|lovely|sweet|exciting|amazing|wonderful|sad))\b",
    r"^(?:that'?s|that is|this is|it'?s|it is|that was|it was|sounds|must be|must have been|that must|"
    r"it must|that looks|it looks|looks|that sounds|it sounds)\s+(?:so\s+|really\s+|such\s+|very\s+|"
    r"pretty\s+|super\s+|totally\s+|absolutely\s+|just\s+|a\s+|an\s+)*(?:great|awesome|amazing|cool|nice|"
    r"fun|lovely|wonderful|fantastic|incredible|exciting|impressive|inspiring|sweet|beautiful|"
    r"gorgeous|cute|adorable|terrible|awful|sad|tough|hard|rough|crazy|wild|insane|interesting|"
    r"neat|brilliant|perfect|huge|big|good|bad|scary|stressful|rewarding|fulfilling|special|"
    r"unbelievable|touching|heartwarming|powerful|meaningful|hilarious|funny|relaxing|peaceful|"
    r"delicious|yummy|tasty|stunning|breathtaking|epic|rad|magical|exhilarating|challenging)\b",
    r"^(?:i bet|i can imagine|i can tell|i can see (?:why|that|how)|i'?m sure it|i'?m sure that was)\b",
))
# Encouragement and instructions to the listener.
ENCOURAGEMENT_CUES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\byou(?:'ve| have)? got (?:this|it)\b|\byou can do (?:it|this)\b|\bgo for it\b|\bgood luck\b",
    r"\bway to go\b|\bkeep (?:it up|going|pushing|at it|up the|on|chasing|doing|striving|believing|"
    r"working|shining|being|me posted|me updated|us posted|in touch)\b|\bkudos\b|\bwell done\b|"
    r"\bcongrat(?:s|ulations)\b",
    r"\b(?:proud of|believe in|rooting for|here for|cheering (?:for|you on)|happy for|inspired by) you\b",
    r"\b(?:i'?m|i am|i'?ll be|i will be|always) (?:\w+ )?(?:here|there) (?:for|to (?:support|help|listen to)) you\b",
    r"\b(?:i|we) (?:hope|wish) (?:you|your|it|that|things)\b|^hope (?:you|your|it|that|things)\b",
    r"\byou (?:deserve|should|need to|have to|gotta|must|might want to|could try|ought to)\b",
    r"\bdon'?t (?:give up|be afraid|forget|worry|stop|hesitate|let)\b|\bnever give up\b",
    r"\b(?:let me know|tell me (?:more|all|how|about)|keep me (?:posted|updated|in the loop)|"
    r"send (?:me )?(?:pics|pictures|photos)|show me)\b",
    r"^(?:let'?s|lets)\b",
    r"\byou'?re (?:gonna|going to) (?:do|be|crush|rock|nail|love)\b",
))
# Verbs that open an instruction to the listener when they start a sentence.
IMPERATIVE_OPENERS = frozenset("""
keep go take have let do don't try stay believe enjoy remember make check give tell trust hang be
stick hold reach follow chase focus push never always treat dream aim listen find embrace savor
cherish celebrate share send bring grab get come join watch read consider build write practice learn
start use put set pick look imagine think ask call visit add hit
""".split())
# Words of the listener: a sentence whose subject or whose point is "you" is about them, and what
# they said of themselves is in their own turns.
_YOU_SUBJECT = re.compile(r"^(?:you|you'?re|you'?ve|you'?ll|you'?d|your|yours|u|ur)\b", re.IGNORECASE)
_EVALUATIVE = re.compile(
    r"\b(?:great|awesome|amazing|cool|nice|fun|lovely|wonderful|fantastic|incredible|exciting|impressive|"
    r"inspiring|inspirational|talented|sweet|beautiful|cute|adorable|proud|brave|strong|kind|generous|"
    r"dedicated|passionate|creative|smart|caring|thoughtful|admirable|special|important|"
    r"rewarding|fulfilling|meaningful|good|bad|best|better|perfect|crucial|key|essential|"
    r"tough|hard|powerful|hope|difference|joy|energy|positive|motivat\w*|encourag\w*|"
    r"support\w*|love|passion\w*)\b", re.IGNORECASE)
# The speaker in a sentence: "I", "me", "my" anywhere; "we" only as the subject it opens with,
# and not in a rallying "we can make a difference" (a plural "us" or "our" is as often everyone).
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|me|my|mine|myself)\b", re.IGNORECASE)
_WE_SUBJECT = re.compile(r"^(?:we|we're|we've|we'll|we'd|our \w+|my \w+ and i)\b"
                         r"(?!\s+(?:can|could|should|must|need to|have to|gotta|all|both)\b)", re.IGNORECASE)
# A turn may drop its subject ("Just got back from a road trip", "Been busy volunteering"): a
# sentence that opens on one of these speaks of the speaker.
ELIDED_SUBJECT_OPENERS = frozenset("""
just been got went started finished had took made spent tried found bought joined signed moved
visited picked baked cooked painted wrote saw met learned learnt decided booked adopted
finally recently currently still actually already gonna going planning thinking working doing
loved enjoyed watched played hoping can't cannot wanted
""".split())
# Sentences about nothing in particular: their subject is an activity or a kind of thing.
_GENERIC_SUBJECT = re.compile(
    r"^(?:(?:it'?s|it is|there'?s|there is|nothing|life|family|friends|friendship|people|"
    r"everyone|everybody|anyone|kids|children|pets|dogs|cats|music|art|nature|food|love|time|"
    r"parenting|moments like|things like|little things|small things|hard work|[a-z]+ing)\b)", re.IGNORECASE)
# A bare plural or mass noun opening a present-tense sentence: "Movies can take us places".
_GENERIC_PLURAL = re.compile(r"^(?!(?:the|a|an|this|that|these|those|my|our|your|his|her|their|its) )"
                             r"(?:good |great |hard |little |small |big |the best |most |many |some )?"
                             r"[a-z]+s?(?:,? (?:and |or )?[a-z]+s?){0,3} (?:can|could|is|are|make|makes|help|"
                             r"helps|bring|brings|give|gives|take|takes|keep|keeps|remind|reminds|mean|means)\b")
# With the talk taken off, fewer words than this and no one in them is a fragment.
SHORT_FRAGMENT = 4
_NUMBER_OR_DATE = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|hundred|yesterday|today|tomorrow|"
    r"tonight|week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"ago|last|next|since)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_PARTICIPANTS = re.compile(r"^\W*(?:participants|attendees|present)\W*:\s*(.+)$", re.IGNORECASE)
_PHOTO = re.compile(r"\s*\[shares? a photo:[^\]]*\]\s*$", re.IGNORECASE)
_PUNCTUATION = " \t,.;:!?-–—…'\"“”‘’()*_~"


def participants_of(header: str) -> list[str]:
    """The names a header's "Participants:" (or "Attendees:", "Present:") line lists."""
    found = []
    for line in header.splitlines():
        listed = _PARTICIPANTS.match(line)
        if listed:
            found += [n.strip() for n in re.split(r",|\band\b|;", listed.group(1)) if n.strip()]
    return found


def strip_discourse(text: str, addressed: Collection[str]) -> str:
    """The sentence without its opening interjections and the names it addresses ("Wow, John,
    that sounds cool!" → "that sounds cool"), nor a closing vocative ("Thanks, Maria" → "Thanks").
    A name is taken off only as a vocative, set off by punctuation: "Dana and I agreed" keeps it."""
    names = {n.lower() for name in addressed for n in (name, *name.split())}
    text = _PHOTO.sub("", text).strip(_PUNCTUATION)
    while True:
        found = _WORD.match(text)
        if not found:
            return "" if not _WORD.search(text) else text
        word, rest = found.group().lower(), text[found.end():]
        following = _WORD.match(rest.lstrip())
        set_off = not rest or rest[0] in ",.!?;:-–—…"
        next_word = following.group().lower() if following and rest[:1].isspace() else None
        if (word in INTERJECTIONS and (set_off or next_word in INTERJECTIONS or next_word in names)) or (
                word in names and set_off):
            text = rest.lstrip(_PUNCTUATION)
            continue
        break
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf",\s*{re.escape(name)}\s*$", "", text, flags=re.IGNORECASE)
    return text.strip(_PUNCTUATION)


# A request after what the speaker tells of themselves ("I'm training for a 5K and I was wondering
# if you could give me some tips"): "wondering if" asks, as "wondering whether" would; it is no
# condition on the clause before it, which tells.
_REQUEST_TAIL = re.compile(
    r"(?:\s*,)?\s+(?:(?:and|so|but)\s+)?(?:I(?=['’])|I\s+)?(?:(?:was|am|['’]m)\s+(?:also\s+|just\s+)?wondering|"
    r"(?:want|wanted|would like|['’]d like)\s+to\s+(?:know|ask))\s+(?:if|whether)\b.*$"
    # "I'm planning to visit the Gold Museum, can you tell me about it?": a question put to the
    # listener after a comma, a dash or a conjunction
    r"|(?:\s*,|\s+[-–—])\s*(?:(?:and|so|but)\s+)?(?:(?:speaking of which|by the way|also)\s*,?\s*)?"
    r"(?:can|could|would|will|do|did)\s+you\b[^.!]*\?\s*$", re.IGNORECASE | re.DOTALL)


# Words that open a question ("What do you think", "Can you"): `selection_rules`' question cue too.
QUESTION_OPENERS = ("who", "what", "when", "where", "why", "how", "which", "whose", "can", "could", "would",
                    "will", "is", "are", "am", "do", "does", "did", "should", "shall", "has", "have", "had",
                    "was", "were")


def told_before_request(text: str) -> str:
    """A turn's sentence without the request that follows what it tells ("I'm getting ready for a
    tennis tournament, and I was wondering if you could ..." or "..., can you give me some tips?"
    → "I'm getting ready for a tennis tournament."); as written where no statement of four words
    or more, no question itself, comes before one."""
    found = _REQUEST_TAIL.search(text)
    if found is None:
        return text
    told = _WORD.findall(text[:found.start()])
    if len(told) < 4 or told[0].lower() in QUESTION_OPENERS:   # "What do you think, can you help?" tells nothing
        return text
    return text[:found.start()].rstrip(_PUNCTUATION) + "."


def _any(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(p.search(text) for p in patterns)


def judge_turn(text: str, speaker: str, participants: Collection[str], names: Collection[str]
               ) -> tuple[Outcome, str | None] | None:
    """(outcome, reason) for one sentence of `speaker`'s turn, or None when the general rules
    should decide. `participants` are the conversation's speakers, `names` every name the context
    uses (a sentence naming someone or something is never generic). A shared photo's caption is
    the captioner's words, not the speaker's: it neither keeps nor drops the sentence."""
    text = _PHOTO.sub("", text)
    addressed = [p for p in participants if p != speaker]
    core = strip_discourse(text, [*addressed, speaker])
    words = _WORD.findall(core)
    if not words:
        return "drop", "no_info"
    # The cues read the sentence as written too: "No worries" or "Nice one" lose their first word
    # to the interjections.
    lowered, written = core.lower(), text.strip(_PUNCTUATION).lower()
    if any(_any(cues, t) for cues in (GREETING_CUES, ACKNOWLEDGEMENT_CUES) for t in (lowered, written)):
        return "drop", "no_info"
    if _any(ENCOURAGEMENT_CUES, lowered) or _any(ENCOURAGEMENT_CUES, written):
        return "drop", "advice"
    first = words[0].lower()
    first_person = (bool(_FIRST_PERSON.search(lowered)) or first in ELIDED_SUBJECT_OPENERS
                    or bool(_WE_SUBJECT.match(lowered)))
    if first in IMPERATIVE_OPENERS and not first_person:
        return "drop", "advice"
    named = [n for n in names if n not in participants and n in core]
    anchored = first_person or bool(named) or bool(_NUMBER_OR_DATE.search(lowered))
    if not anchored and _any(REACTION_CUES, lowered):
        return "drop", "no_info"
    if _YOU_SUBJECT.match(lowered) and not first_person and not named:
        return ("drop", "opinion") if _EVALUATIVE.search(lowered) else ("drop", "no_info")
    if anchored:
        return None
    if _GENERIC_SUBJECT.match(lowered) or _GENERIC_PLURAL.match(lowered):
        return "drop", "generic"
    if _EVALUATIVE.search(lowered):
        return "drop", "opinion"
    if len(words) < SHORT_FRAGMENT:
        return "drop", "ambiguous"
    return None
