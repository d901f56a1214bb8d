"""`corpusmem demo`: import the example corpus and print what the memory now holds."""

from __future__ import annotations

from jobs import import_corpus, runtime
from pipeline.settings import Settings
from pipeline.sources import SourceOptions
from sql import demo_queries, store

EXAMPLES = runtime.PROJECT_ROOT / "examples" / "team"


def main(settings: Settings) -> int:
    options = import_corpus.ImportOptions(
        paths=(str(EXAMPLES),),
        source=SourceOptions.from_settings(settings, modified_at_from="path"),
        batch_size=4)
    report = import_corpus.run_import(options, settings)
    print(report.render())
    with store.connect(store.resolve_dsn(settings)) as conn:
        print("\ndocuments in the memory:")
        for ref, _mime, modified, status, sections, chunks in demo_queries.documents(conn):
            when = f"{modified:%Y-%m-%d}" if modified else "undated   "
            print(f"  {when}  {ref.removeprefix('examples/team/'):<50} {status:<6} "
                  f"{sections:>2} sections {chunks:>2} chunks")
        print("\nsections that are not body text:")
        for title, heading, role in demo_queries.non_body_sections(conn):
            print(f"  {title}: {heading!r} → {role}")
        print("\na few claims, with the characters they stand on and their dates:")
        for title, start, end, text, span, asserted, vfrom, vuntil, precision in demo_queries.sample_claims(conn):
            window = (f"{vfrom:%Y-%m-%d}..{vuntil:%Y-%m-%d}" if vfrom and vuntil else
                      f"{vfrom:%Y-%m-%d}..open" if vfrom else "no stated time")
            print(f"  {title} [{start}:{end}] said {asserted:%Y-%m-%d}: {text}")
            print(f"      source span {span!r}; world time {window} ({precision})")
        query = "who leads the billing migration"
        print(f"\nnearest chunks to {query!r} (cosine distance, exact characters of document.md):")
        from actors.embedder import load_model, resolve_model

        model = load_model(resolve_model(settings.embedding_model), "cpu")
        vector = model.encode([query], normalize_embeddings=True)[0]
        for title, start, end, distance, text in demo_queries.nearest_chunks(conn, vector, 3):
            snippet = " ".join(text.split())[:110]
            print(f"  {distance:.3f}  {title} [{start}:{end}]  {snippet}")
    return 0
