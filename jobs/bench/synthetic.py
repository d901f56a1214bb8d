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
