"""The package as users get it: a built wheel holds every file the code reads, installs into a fresh
environment and migrates an empty memory from there; applied migrations never change.

The wheel is built from a copy of exactly the files git would ship (tracked, or untracked and not
ignored), so a file that exists only in this checkout cannot hide one the wheel lacks, and the
build writes no `build/` or `*.egg-info` into a working tree other processes share.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import psycopg
import psycopg.sql
import pytest

REPO = Path(__file__).resolve().parent.parent
PINS = REPO / "tests" / "fixtures" / "migration_checksums.txt"
MIGRATIONS = REPO / "sql" / "migrations"
# Files the code reads at run time through importlib.resources; the list derived from the source
# tree must hold them, or the derivation itself is broken.
READ_AT_RUN_TIME = ("sql/query_space/memory_v1_space.json", "sql/query_space/saved/examples.sql",
                    "pipeline/prompts/selection.md", "pipeline/prompts/selection.schema.json",
                    "pipeline/prompts/claimify.md", "pipeline/prompts/claimify.schema.json",
                    "pipeline/prompts/normalize.md", "pipeline/prompts/normalize.schema.json",
                    "sql/migrations/0001_authority.sql", "sql/migrations/0004_memory_v1.sql")


def _packages() -> list[str]:
    """Top-level packages, as pyproject.toml tells the package finder to include them."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return [pattern.rstrip("*") for pattern in config["tool"]["setuptools"]["packages"]["find"]["include"]]


def _shipped_sources() -> list[str]:
    """Every file under the packages that git would ship (tracked or not ignored), relative paths."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
                             *_packages()], cwd=REPO, capture_output=True, text=True, check=True).stdout
    # --cached still lists a tracked file deleted in the working tree; the build never sees it.
    return sorted(path for path in listed.split("\0") if path and (REPO / path).is_file())


@pytest.fixture(scope="module")
def sources() -> list[str]:
    return _shipped_sources()


@pytest.fixture(scope="module")
def wheel(sources: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    tree = root / "src"
    for path in [*sources, "pyproject.toml", "README.md"]:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / path, tree / path)
    # --no-isolation: an isolated build pip-installs setuptools into a throwaway environment on
    # every run, which needs the package index and costs seconds; the test environment already
    # holds the setuptools that [build-system] requires (the dev extra pins it).
    result = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                             "--outdir", str(root / "dist"), str(tree)],
                            check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"python -m build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    (built,) = (root / "dist").glob("corpusmem-*.whl")
    return built


def test_wheel_holds_every_source_and_data_file(sources: list[str], wheel: Path) -> None:
    data_files = [path for path in sources if not path.endswith(".py")]
    assert set(READ_AT_RUN_TIME) <= set(data_files), "the source listing misses files the code reads"
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
    missing = [path for path in sources if path not in held]
    assert not missing, (
        f"the wheel lacks {missing}: widen [tool.setuptools.package-data] in pyproject.toml to "
        "cover this kind of file")


# Runs in the fresh environment, from a folder outside the checkout: what a user of the wheel does
# first (migrate an empty memory, as `open_store` does; seed the saved queries, as the server does),
# then what the read and model paths load from package data.
_PROBE = """
import json, sys
import psycopg
import actors, jobs, pipeline, serve, sql
from pipeline.claims import llm_io
from pipeline.facts import normalize_llm
from sql.query_space import query_manifest, saved_queries
from sql.store import authority

with psycopg.connect(sys.argv[1]) as conn:
    applied = authority.migrate(conn)
    again = authority.migrate(conn)
    live_difference = query_manifest.check_live(conn)
    seeded = saved_queries.seed(conn, query_manifest.manifest_hash())
    statuses = dict(conn.execute("SELECT name, status FROM saved_queries WHERE namespace = %s",
                                 (saved_queries.NAMESPACE,)).fetchall())
space = query_manifest.manifest()
print(json.dumps({
    "files": {m.__name__: m.__file__ for m in (actors, jobs, pipeline, serve, sql, authority, llm_io)},
    "applied": applied, "again": again, "live_difference": live_difference,
    "manifest_hash": query_manifest.manifest_hash(), "views": len(space["views"]),
    "examples": [e.name for e in saved_queries.examples()], "seeded": seeded, "statuses": statuses,
    "prompts": {name: len(llm_io.load_prompt(name)) for name in llm_io.PROMPT_NAMES}
               | {"normalize": len(normalize_llm.load_prompt())},
    "schemas": [sorted(llm_io.load_schema(name)) for name in llm_io.PROMPT_NAMES]
               + [sorted(normalize_llm.load_schema())],
}))
"""


def _fresh_venv(root: Path, wheel: Path) -> Path:
    """A new environment holding the wheel and nothing else of corpusmem; its heavy dependencies
    (torch, Ray, PostgreSQL) come from this test's environment instead of a second install."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # A plain path line, not `site.addsitedir`: the .pth files of the test environment, among them
    # the editable install's finder that maps `sql` & co. onto the checkout, are not run, and the
    # path comes after the fresh site-packages, so the wheel's copy of each package wins.
    dependency_dirs = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "corpusmem_test_dependencies.pth").write_text("".join(f"{d}\n" for d in dependency_dirs))
    return venv


@pytest.mark.integration
def test_wheel_installs_and_migrates_an_empty_memory(wheel: Path, pg_admin_dsn: str,
                                                     tmp_path: Path) -> None:
    from sql.query_space import query_manifest
    from sql.store import embedded

    venv = _fresh_venv(tmp_path, wheel)
    database = f"cm_wheel_{tmp_path.name}".replace("-", "_")[:60]
    embedded.ensure_database(pg_admin_dsn, database)
    info = psycopg.conninfo.conninfo_to_dict(pg_admin_dsn) | {"dbname": database}
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    try:
        # -I: no PYTHONPATH, no user site, no working folder on sys.path; only what is installed.
        result = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", _PROBE,
                                 psycopg.conninfo.make_conninfo(**info)],
                                check=False, cwd=outside, capture_output=True, text=True, timeout=300)
    finally:
        with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
            conn.execute(psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                psycopg.sql.Identifier(database)))
    assert result.returncode == 0, result.stderr[-4000:]
    probe = json.loads(result.stdout.strip().splitlines()[-1])

    installed = venv.resolve()
    for module, file in probe["files"].items():
        assert Path(file).resolve().is_relative_to(installed), f"{module} imported from {file}, not the wheel"
    assert probe["applied"] == sorted(p.name for p in MIGRATIONS.glob("*.sql"))
    assert probe["again"] == []
    assert probe["live_difference"] is None
    assert probe["views"] > 0 and probe["manifest_hash"] == query_manifest.manifest_hash()
    assert probe["examples"] and probe["seeded"] == probe["examples"]
    assert set(probe["statuses"].values()) == {"active"}, probe["statuses"]
    assert all(length > 0 for length in probe["prompts"].values()), probe["prompts"]
    assert all(schema for schema in probe["schemas"]), probe["schemas"]


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate(PINS.read_text(encoding="utf-8").splitlines(), start=1):
        digest, sep, path = line.partition("  ")
        assert sep and len(digest) == 64 and path.startswith("sql/migrations/"), (
            f"{PINS.name} line {number} is not `<sha256>  sql/migrations/<file>`: {line!r}")
        assert path not in pins, f"{PINS.name} pins {path} twice"
        pins[path] = digest
    return pins


def test_every_migration_is_pinned() -> None:
    shipped = sorted(f"sql/migrations/{p.name}" for p in MIGRATIONS.glob("*.sql"))
    unpinned = [path for path in shipped if path not in _pins()]
    assert not unpinned, (
        f"{unpinned} not pinned: pin a new migration by adding its line to tests/fixtures/"
        f"{PINS.name} (run `sha256sum sql/migrations/<file> >> tests/fixtures/{PINS.name}` "
        "from the repository root)")


def test_applied_migrations_are_unchanged() -> None:
    changed = []
    for path, digest in _pins().items():
        file = REPO / path
        if not file.is_file():
            changed.append(f"{path} (deleted)")
        elif hashlib.sha256(file.read_bytes()).hexdigest() != digest:
            changed.append(path)
    assert not changed, (
        f"{changed} differ from their pinned checksums: applied migrations are immutable (a memory "
        "that already ran one never runs it again); restore the file and put the change in a new "
        "migration")
