"""Generated team documents for benchmarks: many notes about the same people and projects.

Deterministic for a seed. Documents overlap in who and what they mention (a small cast, a few
projects), the way years of a team's notes do, and carry dates in their names so an import with
`--modified-at-from path` dates them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

PEOPLE = ("Ravi", "Dana", "Priya", "Marco", "Lena", "Tomas", "Aiko", "Samir", "Jonas", "Maya",
          "Elif", "Owen", "Nadia", "Felix", "Grace", "Hugo")
PROJECTS = ("billing migration", "search team", "invoice system", "mobile app", "data platform",
            "payments API", "onboarding flow", "audit logging", "support portal", "pricing engine")
KINDS = ("standup", "planning", "retro", "spec", "weekly", "incident", "decision")

_SENTENCES = (
    "{p} leads the {j}.",
    "{p} is working on the {j} this sprint.",
    "The {j} launch is planned for {d}.",
    "{p} and {q} agreed to move the {j} cutover to {d}.",
    "{p} owns the schema change for the {j}.",
    "The {j} depends on the {k}.",
    "{p} reported {n} open bugs in the {j}.",
    "{q} will review the {j} design before {d}.",
    "The team decided to keep the {j} on the current database until {d}.",
    "{p} moved from the {j} to the {k} on {d}.",
    "Error rates for the {j} fell to {n} per thousand requests.",
    "{q} is the on-call engineer for the {j}.",
    # what real notes also hold, and Selection drops: questions, advice, truisms, unknowns
    "Should we move the {j} launch to {d}?",
    "You should back up the {j} database before the cutover.",
    "Migrations are risky.",
    "We don't know the {j} date yet.",
)


@dataclass(frozen=True)
class GeneratedDoc:
    path: str      # relative path; starts with the document's date
    text: str


def _sentence(rng: random.Random, day: date) -> str:
    p, q = rng.sample(PEOPLE, 2)
    j, k = rng.sample(PROJECTS, 2)
    when = day + timedelta(days=rng.randint(-30, 120))
    return rng.choice(_SENTENCES).format(p=p, q=q, j=j, k=k, n=rng.randint(2, 90),
                                         d=f"{when:%B} {when.day}, {when.year}")


def generate(count: int, seed: int = 7, start: date = date(2024, 1, 1)) -> Iterator[GeneratedDoc]:
    """`count` Markdown documents of about 1–3 KB, each with a title and 2–4 sections."""
    rng = random.Random(seed)
    for i in range(count):
        day = start + timedelta(days=rng.randint(0, 900))
        kind = rng.choice(KINDS)
        project = rng.choice(PROJECTS)
        lines = [f"# {project.title()} {kind} {day:%Y-%m-%d}", ""]
        for _ in range(rng.randint(2, 4)):
            lines += [f"## {rng.choice(('Status', 'Decisions', 'Risks', 'Next steps', 'Notes', 'Owners'))}", ""]
            for _ in range(rng.randint(1, 3)):
                lines += [" ".join(_sentence(rng, day) for _ in range(rng.randint(2, 5))), ""]
        yield GeneratedDoc(path=f"{day:%Y/%m}/{day:%Y-%m-%d}-{kind}-{i:06d}.md", text="\n".join(lines))


# --- the facts benchmark: short dated notes about a growing cast ---------------------------

_FACT_SENTENCES = (
    "{p} leads the {j}.",
    "{p} will lead the {j} from {d}.",
    "{p} works on the {j}.",
    "{p} moved from the {j} to the {k} on {d}.",
    "{p} owns the {j} schema change.",
    "{q} will take over the {j} schema change from {p}.",
    "The {j} cutover is scheduled for {d}.",
    "The {j} launch moves to {d}.",
    "The {j} depends on the {k}.",
    "{p} reports to {q}.",
    "{p} is the on-call engineer for the {j}.",
    "{q} believes the {j} date is too tight.",
)


def generate_facts(count: int, seed: int = 11, start: date = date(2022, 1, 1)) -> Iterator[GeneratedDoc]:
    """`count` short Markdown notes (3–6 statements) over a cast that grows with the corpus (one
    person per 40 notes, one project per 80), so people and projects recur across many
    documents and accumulate facts: leads, moves, ownership changes, dated plans that move or
    disagree."""
    rng = random.Random(seed)
    people = [f"{first} {last}" for last in _SURNAMES for first in PEOPLE][:max(20, count // 40)]
    projects = [f"{p} {n}" for n in range(1, 1000) for p in PROJECTS][:max(10, count // 80)]
    for i in range(count):
        day = start + timedelta(days=rng.randint(0, 1400))
        lines = [f"# {rng.choice(projects).capitalize()} {rng.choice(KINDS)} {day:%Y-%m-%d}", ""]
        for _ in range(rng.randint(3, 6)):
            p, q = rng.sample(people, 2)
            j, k = rng.sample(projects, 2)
            when = day + timedelta(days=rng.randint(-20, 90))
            lines += [rng.choice(_FACT_SENTENCES).format(p=p, q=q, j=j, k=k, d=f"{when:%B} {when.day}, {when.year}"), ""]
        yield GeneratedDoc(path=f"{day:%Y/%m}/{day:%Y-%m-%d}-note-{i:06d}.md", text="\n".join(lines))


_SURNAMES = ("Shah", "Kim", "Okafor", "Rossi", "Novak", "Berg", "Tanaka", "Haddad", "Lund", "Moreau", "Costa",
             "Weber", "Ivanova", "Quinn", "Sato", "Mensah", "Fischer", "Larsen", "Park", "Silva", "Nguyen", "Abara",
             "Dubois", "Keller", "Marsh", "Ortiz", "Petrov", "Reyes", "Stone", "Varga")


# --- timelines: what one person or plan becomes across a few notes -----------------------------

def generate_timelines(count: int, seed: int = 5, start: date = date(2024, 3, 1)) -> Iterator[GeneratedDoc]:
    """`count` short notes in which the same people and plans change over time, in the shapes
    that hand-written notes take and the generators above do not: dates relative to the note's own
    ("since yesterday", "last Monday"), dates without a year ("on 3 July"), moves between teams,
    the same plan dated differently in two notes, and roles (on call, owner, lead)."""
    rng = random.Random(seed)
    people = [f"{first} {last}" for first, last in zip(rng.sample(PEOPLE, 8), rng.sample(_SURNAMES, 8))]
    teams = rng.sample(PROJECTS, 5)
    # A person's team carries from note to note, so that one note's "has been on the billing
    # migration since yesterday" and a later note's "moved from the billing migration to the search
    # team" are about the same person and team, as notes written over weeks are.
    team_of: dict[str, str] = {}
    day = start
    for i in range(count):
        day += timedelta(days=rng.randint(1, 12))
        p, q = rng.sample(people, 2)
        j = team_of.get(p) or rng.choice(teams)
        k = rng.choice([t for t in teams if t != j])
        c = rng.choice(_CODE_NAMES[:3])
        later = day + timedelta(days=rng.randint(3, 60))
        other = later + timedelta(days=rng.choice((-7, 7, 14)))
        lines = [f"# {j.capitalize()} notes {day:%Y-%m-%d}", ""]
        for template in rng.sample(_TIMELINE_SENTENCES, rng.randint(2, 4)):
            lines += [template.format(p=p, q=q, j=j, k=k, c=c, d=f"{later.day} {later:%B}",
                                      d_full=f"{later:%B} {later.day}, {later.year}",
                                      d_iso=f"{later:%Y-%m-%d}", d_other=f"{other:%Y-%m-%d}"), ""]
            if template.startswith("{p}"):
                team_of[p] = k if "{k}" in template else j
        yield GeneratedDoc(path=f"{day:%Y/%m}/{day:%Y-%m-%d}-timeline-{i:04d}.md", text="\n".join(lines))


_TIMELINE_SENTENCES = (
    "{p} has been on the {j} since yesterday.",
    "{p} joined the {j} last Monday.",
    "{p} moved from the {j} to the {k} on {d}.",
    "{p} works on the {k}.",
    "{q} is on call for the {j} this week.",
    "{q} is the on-call engineer for the {k}.",
    "{p} owns the {j} release checklist.",
    "{q} leads the {j} from {d_full}.",
    "The {c} review is scheduled for {d_iso}.",
    "The {c} review is scheduled for {d_other}.",
    "The {c} launch is planned for {d_full}.",
)
# Plans named by a code name, as teams name them (names that are also words are another matter).
_CODE_NAMES = ("Orvane", "Tessaly", "Quillon", "Brakka", "Velmora", "Zephyrix")
