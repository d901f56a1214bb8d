"""What a reader would call junk in a memory made from documentation: entities that are not names,
and claims that stand on code.

These rules are the benchmark's, written apart from the pipeline's own (`pipeline/facts/names.py`,
`pipeline/claims/selection_rules.py`) so that the measurement cannot agree with the pipeline by
construction. They are conservative: what they flag is junk to any reader; a name they pass may
still be junk, which the closing note's reading of a random draw checks.

An entity is junk when its name
- holds code or markup (backticks, brackets, braces, `=`, `$`, `<`, `|`, `://`, a path, a dotted or
  snake_case identifier but a JavaScript library's "Node.js", a trailing colon), or is a flag
  (`--force`);
- opens with a function word ("If …", "To", "Any", "What"), an imperative verb ("Use", "Add",
  "Ensure"), or is one word ending like a verb form or an adverb ("Passing", "Logged", "Instead");
- is a clause or a fragment of one: it holds a finite or modal verb ("Large memory collections
  produce …" holds none the rule knows, but "Graph Memory is built in" holds "is"), runs past six
  words, ends on a function word, or opens lower-case with more than one word ("between users");
- is a document label ("Note", "Consequence", "Example").

A claim stands on code when its source span is code: code punctuation outside backtick spans and
inline tags (`()` with `=`, `->`, `=>`, braces, a trailing `;`), a line opening on a code keyword
(`import`, `def`, `return`, `const`, `$ `), or a span that is mostly backticked code.
"""

from __future__ import annotations

import re

FUNCTION_WORDS = frozenset("""
a an the if unless when whenever while because although though to any what how why where which whether
as so and or but then also only just even each every all some many more most no not both either neither
for from with without by of in on at into onto via per this that these those there here it its they we
you your our my their his her i me us them between before after during instead now once still yet
however otherwise than like such other another same own few several much less least very too
""".split())
IMPERATIVES = frozenset("""
use add ensure set run install create make check see note call pass configure enable disable update
delete remove get open click select choose replace define import initialize initialise start stop build
deploy test read write store search retrieve follow navigate go keep avoid try learn clone copy export
upload download connect provide specify include return send fetch list filter review monitor track tune
compare combine wrap register visit sign log upgrade migrate reduce increase limit scope tag attach
assign apply implement extend override inspect verify confirm validate find browse explore adjust change
edit modify customize customise handle save load restart print ask steer pick put give take let tell
show leave skip turn pull push point paste drop mark treat think consider refer pin replace bring fill
grant revoke rotate generate paste type enter press wait split join merge sort group count
""".split())
LABELS = frozenset("""
note notes tip tips warning warnings example examples consequence consequences info important caution
step steps result results input output default type description action actions flag flags key field
operation status summary overview usage returns parameters parameter response request error errors
fix cause problem solution answer question impact community impact prerequisites requirements
""".split())
VERBS = frozenset("""
is are was were be been being has have had do does did can could will would should may might must
shall isn't aren't wasn't weren't doesn't don't didn't can't won't
""".split())
_MARKUP = re.compile(r"[`<>{}\[\]()$=|\\#@*~^]|://|\w/\w|\w_\w|\w\.\w|:\s*$|^-")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_VERBISH_END = ("ing", "ed", "ly")

_CODE_KEYWORDS = re.compile(
    r"^\s*(?:(?:import|from\s+\S+\s+import|def|class|async\s+def|await|return|const|let|var|function|export|"
    r"curl|pip|npm|npx|yarn|docker|git|except|raise|elif)\b(?!-)|print\(|console\.|\$\s|#!|@\w+|"
    r"if\s+__name__|try:|else:|for\s+\w+\s+in\b|while\s|\}|\{)")
_CODE_SYNTAX = re.compile(r"\w\([^)]*=|->|=>|[{};]\s*$|^\s*[{}]|\)\s*:\s*$|\w+\.\w+\(|==|!=|:=|\+=|\w+=\w")
_BACKTICKED = re.compile(r"`[^`]*`")
_INLINE_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def junk_entity(name: str) -> str | None:
    """Why `name` is not an entity's name (markup, flag, function_word, imperative, verb_form,
    clause, lowercase_phrase, label), or None."""
    name = " ".join(name.split())
    if not name:
        return "empty"
    if name.startswith("-"):
        return "flag"
    if _MARKUP.search(re.sub(r"\b([A-Z][A-Za-z0-9]*)\.js\b", r"\1", name)):
        return "markup"   # a JavaScript library's name is no dotted identifier ("Node.js", a reader's name)
    words = _WORD.findall(name)
    if not words:
        return "markup"
    first, lowered = words[0].lower(), [w.lower() for w in words]
    if first in FUNCTION_WORDS:
        return "function_word"
    if first in IMPERATIVES and (len(words) > 1 or name[0].isupper()):
        return "imperative"
    if " ".join(lowered) in LABELS:
        return "label"
    if len(words) == 1 and first.endswith(_VERBISH_END) and len(first) > 4:
        return "verb_form"
    if any(w in VERBS for w in lowered) or len(words) > 6 or lowered[-1] in FUNCTION_WORDS:
        return "clause"
    if len(words) > 1 and words[0][0].islower():
        return "lowercase_phrase"
    return None


def on_code(span: str) -> bool:
    """Whether a claim's source span is code rather than prose about it."""
    if _CODE_KEYWORDS.match(span):
        return True
    outside = _INLINE_TAG.sub(" ", _BACKTICKED.sub(" ", span))  # a link's tag around prose is no code
    if _CODE_SYNTAX.search(outside):
        return True
    ticked = sum(len(m.group()) for m in _BACKTICKED.finditer(span))
    return ticked > 0.5 * len(span.strip())
