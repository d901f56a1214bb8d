"""The `corpusmem` command: import, import-vectors, status, retry, claims, why-not, facts, delete, serve, db,
report, demo, sql, bench; and backup, restore, export, reembed, entities, check, costs."""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import sys

from jobs import runtime
from jobs.settings import SettingsError


def _import(args: argparse.Namespace) -> int:
    from jobs import import_corpus

    settings = runtime.settings()
    options = import_corpus.options_from_args(args, settings)
    import_corpus.own_signals()
    report = import_corpus.run_import(options, settings)
    print(report.render())
    return 0


def _import_vectors(args: argparse.Namespace) -> int:
    from jobs import import_vectors

    return import_vectors.main_args(args, runtime.settings())


def _status(args: argparse.Namespace) -> int:
    from jobs import status

    return status.main(runtime.settings())


def _retry(args: argparse.Namespace) -> int:
    from jobs import retry

    return retry.main(runtime.settings(), args)


def _claims(args: argparse.Namespace) -> int:
    from jobs import claims_cli

    print(claims_cli.show_claims(runtime.settings(), args.doc))
    return 0


def _why_not(args: argparse.Namespace) -> int:
    from jobs import claims_cli

    print(claims_cli.why_not(runtime.settings(), args.doc, args.text))
    return 0


def _facts(args: argparse.Namespace) -> int:
    from jobs import facts_cli

    print(facts_cli.show_facts(runtime.settings(), args))
    return 0


def _delete(args: argparse.Namespace) -> int:
    from jobs import facts_cli

    print(facts_cli.delete(runtime.settings(), args.doc))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from jobs import serve_cmd

    return serve_cmd.main(runtime.settings(), args)


def _demo(args: argparse.Namespace) -> int:
    from jobs import demo

    return demo.main(runtime.settings(), port=args.port)


def _db(args: argparse.Namespace) -> int:
    from jobs import db

    return db.main(runtime.settings(), args)


def _report(args: argparse.Namespace) -> int:
    from jobs import report

    return report.main(runtime.settings(), args)


def _sql(args: argparse.Namespace) -> int:
    from jobs import sql_cli

    return sql_cli.main(runtime.settings(), args)


def _bench(args: argparse.Namespace) -> int:
    from jobs import shutdown
    from jobs.bench import imports as bench

    # a benchmark runs imports and servers of its own: a signal stops them with it
    shutdown.install(interrupt=True)
    return bench.main(args)


def build_parser() -> argparse.ArgumentParser:
    from jobs import import_corpus
    from jobs.bench import imports as bench

    parser = argparse.ArgumentParser(prog="corpusmem", description="A memory engine for AI agents, "
                                     "written by a Ray batch pipeline into PostgreSQL.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("import", help="import files, folders and archives into the memory")
    import_corpus.add_arguments(p)
    p.set_defaults(func=_import)

    p = sub.add_parser("import-vectors", help="rebuild the documents of a vector store (Qdrant, Chroma, LanceDB, "
                                              "pgvector, Parquet, JSONL) from its chunks and import them")
    from jobs import import_vectors

    import_vectors.add_arguments(p)
    p.set_defaults(func=_import_vectors)

    p = sub.add_parser("status", help="per-stage counts by status, failures with their reasons, totals and "
                                      "recent import runs")
    p.set_defaults(func=_status)

    p = sub.add_parser("retry", help="replay failed and dead-lettered work through the same pipeline")
    from jobs import retry

    retry.add_arguments(p)
    p.set_defaults(func=_retry)

    p = sub.add_parser("claims", help="a document's claims with their spans and dates")
    p.add_argument("doc", metavar="DOC", help="doc_id, source_ref (or its file name) or title")
    p.set_defaults(func=_claims)

    p = sub.add_parser("why-not", help="why is this sentence not in memory? (from the audit ledger)")
    p.add_argument("doc", metavar="DOC", help="doc_id, source_ref (or its file name) or title")
    p.add_argument("text", help="the words to look for in the document")
    p.set_defaults(func=_why_not)

    p = sub.add_parser("facts", help="what the memory holds true about an entity or matching words, "
                                     "now, at a date, over a range or ever")
    from jobs import facts_cli

    facts_cli.add_facts_arguments(p)
    p.set_defaults(func=_facts)

    p = sub.add_parser("delete", help="delete a document (every version); facts only it supported are retracted")
    p.add_argument("doc", metavar="DOC", help="doc_id, source_ref (or its file name) or title")
    p.set_defaults(func=_delete)

    p = sub.add_parser("serve", help="serve the read API over HTTP with Ray Serve")
    from jobs import serve_cmd

    serve_cmd.add_arguments(p)
    p.set_defaults(func=_serve)

    p = sub.add_parser("db", help="the embedded PostgreSQL as a server for a cluster: db serve")
    from jobs import db

    db.add_arguments(p)
    p.set_defaults(func=_db)

    p = sub.add_parser("report", help="an import run and the memory it left: text, or --html FILE with plots")
    from jobs import report

    report.add_arguments(p)
    p.set_defaults(func=_report)

    p = sub.add_parser("demo", help="import the example corpus and show what the memory holds")
    p.add_argument("--port", type=int, default=8000, help="where the read API it asks over HTTP listens (default 8000)")
    p.set_defaults(func=_demo)

    p = sub.add_parser("sql", help="read-only SQL over the memory_v1 query space; saved queries; revalidate")
    from jobs import sql_cli

    sql_cli.add_arguments(p)
    p.set_defaults(func=_sql)

    p = sub.add_parser("bench", help="benchmarks, each against a baseline measured in the same run")
    bench.add_arguments(p)
    p.set_defaults(func=_bench)

    for name, module, text in KEEPING:
        p = sub.add_parser(name, help=text)
        importlib.import_module(f"jobs.{module}").add_arguments(p)
        p.set_defaults(func=functools.partial(_keeping, module))
    return parser


# Commands that keep a memory for years: (command, module under jobs/, help). Each module has
# `add_arguments(parser)` and `main(settings, args) -> exit status`.
KEEPING = (
    ("backup", "backup", "a consistent backup of the memory (database and objects) to a folder or s3:// URI"),
    ("restore", "restore", "restore a backup into an empty home or DSN, checking every object"),
    ("export", "export", "the memory's documents, claims, entities, facts and contradictions as Parquet or JSONL"),
    ("reembed", "reembed", "move every vector to another embedding model or execution, serving throughout"),
    ("entities", "entities_cli", "entity merge review: proposals, merge, unmerge, accept, reject"),
    ("check", "check", "inspect the memory's integrity; --repair fixes what is safe"),
    ("costs", "costs", "tokens and device seconds per stage, model and run"),
)


def _keeping(module: str, args: argparse.Namespace) -> int:
    return importlib.import_module(f"jobs.{module}").main(runtime.settings(), args)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SettingsError as err:
        print(f"corpusmem: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        from actors.embedder import ModelNotFound
        from actors.sources.stores import StoreUnavailable
        from actors.extractor import ExtractorUnavailable
        from serve.retrieval.facts import BadTimeQuery
        from sql.read.claims_queries import DocumentNotFound
        from sql.store.authority import StoreError
        from sql.write.reconcile import UnknownDocument

        if isinstance(err, (StoreError, ModelNotFound, DocumentNotFound, ExtractorUnavailable, BadTimeQuery,
                            UnknownDocument, StoreUnavailable, runtime.RayUnreachable)):
            print(f"corpusmem: {err}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
