"""Claimify for a conversation turn: the speaker's words as a standalone third-person statement.

- What the speaker says of themselves is a claim about them, with the verb agreeing: "I play
  clarinet" → "Melanie plays clarinet", "I've lost my job at Door Dash" → "Gina has lost their
  job at Door Dash", and a dropped subject is restored ("Just got back from a road trip" →
  "John just got back from a road trip").
- The speaker's own stance keeps its holder and is attributed: "I think the festival was too
  crowded" → "Melanie thinks the festival was too crowded".
- What the speaker reports of someone or something else stays attributed: "My sister adopted a
  puppy" → "Maria said that Maria's sister adopted a puppy".
- "We" is the speaker and others, and what the speaker says of others with them stays their
  report ("We made pizza" → "John said that John and others made pizza", "Dana and I agreed" →
  "Ravi said that Dana and Ravi agreed", as the seed writes it); in a conversation of two, "you"
  is the other participant.
- Interjections and the names a sentence addresses are taken off its front ("Yeah Maria, I'm
  hoping ..." → "I'm hoping ..."); a shared photo's caption becomes a claim of its own.

The possessive for the speaker is "their": the rules do not know anyone's pronouns, and a
guessed one would be written into the memory as if the source said it.
Why hand-written: no maintained library rewrites English person and agreement without a
parser's model weights, which the rules backend must not load.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import NamedTuple

from pipeline.claims.selection_turns import ELIDED_SUBJECT_OPENERS, strip_discourse, told_before_request

# Verbs that take a stance: the statement is about the holder's view, so it stays attributed.
STANCE_VERBS = frozenset("""think believe feel guess suppose reckon agree disagree doubt expect bet hope
wish suspect imagine figure""".split())
# Between "I" and its verb: adverbs that leave the verb's agreement to the verb.
_ADVERBS = frozenset("""really just also still always never usually often actually totally definitely
recently finally even only sometimes absolutely honestly currently already both all truly seriously
kinda sorta generally normally mostly probably certainly literally basically personally especially
sure""".split())
_MODALS = frozenset("""can could will would should might must may shall did didn't can't couldn't won't
wouldn't shouldn't mustn't cannot""".split())
_AGREEMENT = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "haven't": "hasn't",
              "'m": "is", "'ve": "has", "'ll": "will", "'d": "would", "go": "goes", "was": "was",
              "wasn't": "wasn't", "am not": "is not", "ain't": "isn't", "gonna": "is going to",
              "wanna": "wants to", "gotta": "has to"}
# Past forms that do not end in -ed (and forms that read the same in the present and the past,
# which are left as written rather than guessed).
_PAST = frozenset("""got went made took saw had was were did said found came gave knew thought felt left
met ran bought brought taught caught began wrote read won lost sold told heard kept slept spent built sent
stood understood held fell drew drove ate grew threw flew wore chose forgot put cut hit set let hurt quit
became became began sang swam rode shook woke broke spoke stole froze gotten done been seen fed led paid
laid lent meant sat shot shut split spread struck swore tore upset wound dug fought fled hung lit slid
spun stuck stung swung""".split())
# Present forms that end as a past does ("I need" is not "I needed").
_PRESENT_IN_ED = frozenset("need feed bleed breed speed exceed proceed succeed heed seed weed embed".split())
# An opening that points back at something said before: the rules cannot say what it is.
_POINTING = re.compile(r"^(It|It['’]s|This|That|That['’]s|They|They['’]re|These|Those|He|He['’]s|She|She['’]s)\b"
                       r"(?!\s+(?:is|are)\s+\d)")
_I_FORMS = re.compile(r"\b(I)(['’](?:m|ve|ll|d))?(?![\w'’])")
_AFTER_I = re.compile(r"((?:\s+(?!I(?:['’](?:m|ve|ll|d))?(?![\w'’]))[A-Za-z'’]+){1,4})")
_SPEAKER_WORDS = re.compile(r"\b(?:I|I['’](?:m|ve|ll|d)|me|my|mine|myself)\b", re.IGNORECASE)
_PHOTO = re.compile(r"\s*\[shares? a photo:\s*(?P<caption>[^\]]*)\]\s*$", re.IGNORECASE)
# Openings that place the sentence in the conversation, not in the world: left out of the claim.
_DISCOURSE_LEAD = re.compile(r"^(?:since (?:we|i) last (?:talked|chatted|spoke)|in the meantime|meanwhile|anyway|"
                             r"anyways|by the way|on another note|speaking of which|for me|personally|"
                             r"to be honest|honestly)\s*,?\s*", re.IGNORECASE)
_FILLER_PHRASES = re.compile(r",?\s*\b(?:you know|i mean|like i said|to be honest|tbh|honestly|lol|haha)\b,?",
                             re.IGNORECASE)
_OPENING_ADJUNCT = re.compile(
    r"^(?:for me|personally|(?:last|this|next) (?:week|weekend|month|year|night|friday|saturday|sunday|monday|tuesday|wednesday|"
    r"thursday)|yesterday|today|tonight|recently|lately|since (?:we|i) last (?:talked|chatted|spoke)|"
    r"a (?:few|couple(?: of)?) (?:days|weeks|months) ago|the other day|earlier (?:today|this week)|"
    r"apart from [^,]+|on another note|by the way|in the meantime|meanwhile|anyway|so|well|"
    r"after [^,]+|before [^,]+|when [^,]+|since [^,]+|at [^,]+|on [^,]+|in [^,]+)\s*,\s*", re.IGNORECASE)


def photo_caption(text: str) -> tuple[str, str | None]:
    """(the sentence without its shared-photo tag, the caption or None)."""
    found = _PHOTO.search(text)
    if not found:
        return text, None
    return text[:found.start()].rstrip(), found.group("caption").strip().rstrip(".") or None


def photo_claim(speaker: str, caption: str) -> str:
    """"a photo of a dog on a beach" → "Maria shared a photo of a dog on a beach.\""""
    caption = re.sub(r"^(?:a |an )?(?:photo|photograph|photography|picture|pic|image)\s+of\s+", "", caption,
                     flags=re.IGNORECASE)
    return f"{speaker} shared a photo of {caption}."


def _third_person(verb: str) -> str:
    """The present tense's third person of a base form: play → plays, go → goes, try → tries."""
    lowered = verb.lower()
    if lowered in _AGREEMENT:
        return _AGREEMENT[lowered]
    if lowered.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lowered.endswith("y") and len(lowered) > 1 and lowered[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _agrees(words: list[str]) -> list[str]:
    """The words after a replaced "I", its verb made to agree with a third-person subject."""
    out = list(words)
    for i, word in enumerate(out):
        lowered = word.lower()
        if lowered in _ADVERBS:
            continue
        past = lowered.endswith(("ed", "n't")) and lowered not in _AGREEMENT and lowered not in _PRESENT_IN_ED
        if lowered in _MODALS or lowered in _PAST or past:
            return out
        if not word.isalpha() and lowered not in _AGREEMENT:
            return out
        if lowered.endswith("ing"):
            return out
        out[i] = _third_person(word)
        return out
    return out


def _replace_first_person(text: str, speaker: str, others: str) -> str:
    """Every "I" (with its contraction) as the speaker, its verb agreeing; "me", "myself",
    "mine" as the speaker; "my" as "their"; "we", "us" as the speaker and others, "our" as
    "their"."""
    pieces: list[str] = []
    cursor = 0
    for found in _I_FORMS.finditer(text):
        pieces.append(text[cursor:found.start()])
        contraction = (found.group(2) or "").replace("’", "'")
        if contraction:
            pieces.append(f"{speaker} {_AGREEMENT[contraction]}")
            cursor = found.end()
            continue
        # the verb is looked for in the next few words, but never past another "I": "I think I'll
        # try" has two subjects, each replaced where it stands
        rest = text[found.end():]
        words = _AFTER_I.match(rest)
        if words:
            tokens = words.group(1).split()
            if len(tokens) >= 2 and tokens[0].lower() == "am" and tokens[1].lower() == "not":
                agreed = ["is", "not", *tokens[2:]]
            else:
                agreed = _agrees(tokens)
            pieces.append(speaker + " " + " ".join(agreed))
            cursor = found.end() + len(words.group(1))
        else:
            pieces.append(speaker)
            cursor = found.end()
    pieces.append(text[cursor:])
    text = "".join(pieces)
    text = re.sub(r"\b(?:me|myself)\b", speaker, text)
    text = re.sub(r"\bmine\b", f"{speaker}'s", text)
    text = re.sub(r"\b[Mm]y\b", lambda m: "their" if speaker in text[:m.start()] else f"{speaker}'s", text)
    text = re.sub(r"\b[Ww]e(?:['’](?:re|ve|ll|d))?(?![\w'’])",
                  lambda m: others + {"'re": " are", "'ve": " have", "'ll": " will", "'d": " would"}.get(
                      m.group(0)[2:].replace("’", "'"), ""), text)
    text = re.sub(r"\bus\b", others, text)
    text = re.sub(r"\b[Oo]ur\b", "their", text)
    return text


def _replace_listener(text: str, listener: str | None) -> str:
    if listener is None:
        return text
    text = re.sub(r"\b[Yy]ours\b", f"{listener}'s", text)
    text = re.sub(r"\b[Yy]our\b", f"{listener}'s", text)
    text = re.sub(r"\b[Yy]ou(?:['’](?:re|ve|ll|d))?(?![\w'’])",
                  lambda m: listener + {"'re": " is", "'ve": " has", "'ll": " will", "'d": " would"}.get(
                      m.group(0)[3:].replace("’", "'"), ""), text)
    return text


# Where a clause of its own begins after a pointing opening: a comma, a dash, or a conjunction.
_CLAUSE_BREAK = re.compile(r"\s*(?:[,;:]|\s[-–—]\s)\s*(?:(?:but|and|so|because|since|as)\s+)?|\s+(?:but|and|so|because)\s+")
_OWN_CLAUSE = re.compile(r"(?:I|I['’](?:m|ve|ll|d))\s+(?!(?:bet|guess|mean|hope|wish|know|think|agree|can imagine|can tell)\b)"
                         r"[a-z]")


def _speaker_clause(rest: str) -> str | None:
    """The first clause after a comma, dash or conjunction that opens on the speaker ("I ..."), up
    to the next break; None when there is none."""
    for found in _CLAUSE_BREAK.finditer(rest):
        tail = rest[found.end():]
        if _OWN_CLAUSE.match(tail):
            end = _CLAUSE_BREAK.search(tail)
            clause = tail[:end.start()] if end else tail
            return clause if len(clause.split()) >= 3 else None
    return None


def continuation(text: str, speaker: str, participants: Collection[str]) -> str | None:
    """A sentence that points back ("It was rich and creamy", "They make me feel free") as the
    continuation of the claim the sentence before it in the same turn made: the speaker's and the
    listener's words replaced, its pointing word kept, since the claim it joins says what it is;
    None when nothing is left once the talk is off."""
    others = [p for p in participants if p != speaker]
    listener = others[0] if len(others) == 1 else None
    core = strip_discourse(_FILLER_PHRASES.sub("", text), [*others, speaker])
    if len(core.split()) < 3:
        return None
    core = _replace_listener(_replace_first_person(core, speaker, f"{speaker} and others"), listener)
    core = core.strip().rstrip(".!?,;:-–— ")
    return core if core.startswith(speaker) else core[0].lower() + core[1:]


# An adverb opening a noun phrase ("Just the act of serving meals was ..."), not a dropped "I".
_NOUN_PHRASE_NEXT = re.compile(r"^\w+\s+(?:the|a|an|this|that|these|those|my|your|our|their|his|her|its|"
                               r"some|any|every|all|no)\b", re.IGNORECASE)


class Rewrite(NamedTuple):
    text: str
    attributed: bool
    unresolved: str | None = None   # the opening word that points at something the rules cannot name


def rewrite(text: str, speaker: str, participants: Collection[str], names: Collection[str] = ()) -> Rewrite | None:
    """The claim for one sentence of `speaker`'s turn, without its photo tag; None when nothing is
    left once the interjections and addressed names are off. `names` are the words the context
    uses as names: a reported sentence's first word keeps its capital only when it is one."""
    others = [p for p in participants if p != speaker]
    listener = others[0] if len(others) == 1 else None
    core = strip_discourse(_FILLER_PHRASES.sub("", told_before_request(text)), [*others, speaker])
    if not core:
        return None
    core = re.sub(r"^(?:but|and|so|or|plus|also)\b[,\s]*", "", core, flags=re.IGNORECASE) or core
    core = core[0].upper() + core[1:]
    core = _DISCOURSE_LEAD.sub("", core) or core
    core = core[0].upper() + core[1:]
    adjunct = _OPENING_ADJUNCT.match(core)
    lead, body = (core[:adjunct.end()], core[adjunct.end():]) if adjunct else ("", core)
    first = body.split(" ", 1)[0].lower()
    if first in ELIDED_SUBJECT_OPENERS and not re.match(r"^(?:I|we|just like)\b", body, re.IGNORECASE) \
            and not _NOUN_PHRASE_NEXT.match(body):
        body = ("I have " if first == "been" else "I ") + body[0].lower() + body[1:]
    pointing = _POINTING.match(body)
    if pointing:
        # "It wasn't easy, but I'm proud of what I achieved": what points back stays out, and the
        # clause the speaker says of themselves stands on its own
        own = _speaker_clause(body[pointing.end():])
        if own is None:
            return Rewrite("", False, pointing.group(1))
        lead, body = "", own
    # "I ..." is about the speaker alone; "We ...", "Dana and I ..." report others too, and stay the
    # speaker's report (the seed's "Ravi said that Dana and Ravi agreed ...")
    about_speaker = bool(re.match(r"^(?:I|I['’](?:m|ve|ll|d))\b", body))
    stance = about_speaker and bool(re.match(
        rf"^I\s+(?:(?:{'|'.join(sorted(_ADVERBS))})\s+)*(?:{'|'.join(sorted(STANCE_VERBS))})\b", body, re.IGNORECASE))
    others_phrase = f"{speaker} and others"
    # What the speaker says of someone else ("My sister adopted a puppy", "The class was full")
    # stays theirs to have said; a sentence that is about the speaker, whatever its grammatical
    # subject ("Iron Man is my top pick"), is a claim about them.
    of_someone_else = (bool(re.match(r"^(?:my\s|we\b|we['’]|[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?\s+and\s+I\b)", body,
                                     re.IGNORECASE)) or not _SPEAKER_WORDS.search(body))
    if about_speaker or not of_someone_else:
        claim = _replace_listener(_replace_first_person(lead + body, speaker, others_phrase), listener)
        attributed = stance
    else:
        reported = _replace_listener(_replace_first_person(lead + body, speaker, others_phrase), listener)
        first_word = re.match(r"[\w-]+", reported)
        keep = first_word is not None and (first_word.group() in names or first_word.group() in participants
                                           or first_word.group() == speaker or first_word.group().isupper())
        claim = f"{speaker} said that {reported if keep else reported[0].lower() + reported[1:]}"
        attributed = True
    claim = claim.strip().rstrip(",;:-–— ")
    if claim[-1:] not in ".!?":
        claim += "."
    return Rewrite(claim[0].upper() + claim[1:], attributed)
