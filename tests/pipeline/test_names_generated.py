"""Names that are also words, on generated notes and pages: a relation only names take proves its
ends in a note, and a page of documentation's capitalised English words stay no names."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from pipeline.facts import names
from tests.support.normalized import normalized

SAID = datetime(2026, 6, 12, 14, tzinfo=timezone.utc)
PEOPLE = ["Ravi", "Priya", "Nadia Brook", "Tomasz", "Elena", "Marcus", "Ines Moreno", "Dana Kim", "Wei", "Olu"]
WORDS = ["Harbor", "Summit", "Kestrel", "Copper", "Maple", "River", "Stone", "Lantern", "Falcon", "Cedar", "Granite",
         "Meadow", "Silver", "Pine", "Anchor", "Beacon", "Orchard", "Willow", "Blue", "Golden"]
HEADS = ["Bank", "Logistics", "Labs", "Partners", "Health", "Foods", "Systems", "Studio", "Group", "Outfitters"]
PLACES = ["Salt Lake City", "Cedar Falls", "Porto", "Berlin", "Green Bay", "Rose Valley", "Stone Harbor"]
# (template, predicate, which ends are the names)
TEMPLATES = [("{p} works for {o}.", "works_for"), ("{p} works at {o}.", "works_for"),
             ("{p} is employed by {o}.", "works_for"), ("{p} is a member of the {o}.", "member_of"),
             ("{p} lives in {l}.", "other:lives_in"), ("{p} reports to {q}.", "reports_to"),
             ("The {o} office is located in {l}.", "located_in")]


def _rows(*texts: str, page: str | None = None) -> tuple[list[tuple], set[str]]:
    return normalized(texts, page=page if page is not None else " ".join(texts), said=SAID)


@pytest.mark.parametrize("seed", range(40))
def test_a_note_relates_its_names_whatever_their_words(seed: int) -> None:
    rnd = random.Random(seed)
    template, predicate = rnd.choice(TEMPLATES)
    person, other = rnd.sample(PEOPLE, 2)
    org = " ".join(rnd.sample(WORDS, rnd.choice([1, 2])) + [rnd.choice(HEADS)])
    place = rnd.choice(PLACES)
    text = template.format(p=person, o=org, q=other, l=place)
    subject = f"{org} office" if template.startswith("The") else person
    obj = {"works_for": org, "member_of": org, "other:lives_in": place, "reports_to": other,
           "located_in": place}[predicate]
    rows, _ = _rows(text)
    assert ("relation", names.key(subject), predicate, names.key(obj)) in rows, (text, rows)


@pytest.mark.parametrize("seed", range(20))
def test_a_page_of_documentation_keeps_its_headings_words_out(seed: int) -> None:
    rnd = random.Random(seed)
    feature = " ".join(rnd.sample(["Voice", "Memory", "Graph", "Export", "Search", "Batch", "Webhook", "Config"], 2)
                       + [rnd.choice(["Settings", "Configuration", "Management", "Overview", "Support"])])
    text = f"Open the {feature} page and set the retention window."
    page = f"{text}\n\nRun `mem0 sync` afterwards."
    _, mentions = _rows(text, page=page)
    assert mentions == set(), (text, mentions)
