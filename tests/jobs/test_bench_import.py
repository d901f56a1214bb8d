"""The import benchmark's pure parts: the floor's pieces, the LoCoMo corpora it scales over, its table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors import calibration
from actors.embedder import DEFAULT_MODEL, resolve_model
from jobs.bench import cpu_use, imports
from tests.support.locomo import CONVERSATION


def test_the_floor_cuts_each_document_into_pieces_of_its_own(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text("a" * 2500)
    (tmp_path / "sub" / "b.txt").write_text("b" * 300)
    pieces = imports.corpus_pieces(tmp_path)
    assert [len(p) for p in pieces] == [1000, 1000, 500, 300]
    assert pieces[2] == "a" * 500 and pieces[3] == "b" * 300


def test_locomo_scales_from_half_of_each_conversations_sessions_to_all(tmp_path: Path):
    source = tmp_path / "locomo"
    source.mkdir()
    conversation = dict(CONVERSATION, session_3_date_time="10:00 am on 3 June, 2023",
                        session_3=[{"speaker": "John", "dia_id": "D3:1", "text": "Biscuit chewed my running shoes."}],
                        session_4_date_time="11:00 am on 4 June, 2023",
                        session_4=[{"speaker": "Maria", "dia_id": "D4:1", "text": "Sorry about the shoes!"}])
    (source / "41.json").write_text(json.dumps(conversation))
    (source / "42.json").write_text(json.dumps(CONVERSATION))
    half, whole = imports._locomo_folders(source, tmp_path / "work")
    assert sorted(p.name for p in half.iterdir()) == ["locomo-41-session-01.md", "locomo-41-session-02.md",
                                                      "locomo-42-session-01.md"]
    assert len(list(whole.iterdir())) == 6


def test_the_table_gives_the_ratio_each_stage_and_the_scaling():
    run = {"documents": 90, "pieces": 405, "chunks": 555, "claims": 2852, "import_seconds": 30.0,
           "exit_seconds": 33.0, "floor_seconds": 15.0, "floor_execution": "torch-bf16",
           "floor_timings": {"torch-bf16": 15.0, "onnx-int8": 17.0}, "execution": "onnx-int8", "ratio": 0.5, "exit_ratio": 15.0 / 33.0, "startup_seconds": 4.0, "pipeline_seconds": 26.0,
           "driver_peak_rss_mib": 250.0, "stage_seconds": {"embed": 11.5, "extract": 2.3, "read": 0.01},
           "steady_docs_per_second": None, "cpu_seconds": 54.0, "cpu_seconds_per_doc": 0.6,
           "cpu_seconds_per_doc_outside_embedder": 0.344,
           "facts_seconds": {"normalize": 1.1, "adjudicate": 1.9},
           "texts_embedded": {"chunks": 555, "claims": 2474, "labels": 0, "profiles": 9},
           "vectors_not_embedded": {"same_text_in_this_run": 378, "labels_from_their_claim": 2505}}
    table = imports.render({"threads": 2, "embed_batch_size": 32, "corpora": {"locomo": {
        "runs": [run, run], "time_ratio_2x": 1.5, "floor_ratio_2x": 2.0, "driver_rss_ratio_2x": 1.01}}})
    assert "floor/import = 0.50 to the report, 0.45 to exit" in table
    assert "with onnx-int8, floor 15.0 s through torch-bf16; through onnx-int8: 17.0 s →" in table
    assert "embed 11.5" in table and "read" not in table.split("busy seconds per stage:")[1].split("\n")[0]
    assert "adjudicate 1.9 s" in table and "same text in this run 378" in table
    assert "2x the corpus: 1.50x the import time (floor 2.00x), driver peak RSS 1.01x" in table
    assert ("steady state (after the first minute): not reached (the pipeline ended within it); CPU 600 ms a "
            "document, 344 ms outside the embedder") in table
    assert "documents at this steady state" not in table   # projected from the generated notes only
    assert "the most floor/import" not in table   # no encoding alone measured


def test_the_most_a_run_allows_is_its_floor_over_its_start_up_and_its_encoding_alone():
    run = {"documents": 90, "pieces": 405, "chunks": 555, "claims": 1526, "import_seconds": 24.3,
           "exit_seconds": 26.7, "floor_seconds": 5.2, "floor_execution": "onnx-int8", "floor_timings": {},
           "execution": "onnx-int8", "ratio": 5.2 / 24.3, "exit_ratio": 5.2 / 26.7, "startup_seconds": 6.2,
           "pipeline_seconds": 18.1, "driver_peak_rss_mib": 250.0, "stage_seconds": {}, "facts_seconds": {},
           "steady_docs_per_second": None, "cpu_seconds": 50.0, "cpu_seconds_per_doc": 0.55,
           "cpu_seconds_per_doc_outside_embedder": 0.3, "texts_embedded": {}, "vectors_not_embedded": {},
           "alone_seconds": 7.6, "alone_by_kind": {"chunks": 5.5, "claims": 2.1},
           "alone_texts": {"chunks": 555, "claims": 1526}}
    run["ratio_bound"] = imports.ratio_bound(run)
    assert run["ratio_bound"] == pytest.approx(5.2 / 13.8)
    table = imports.render({"threads": 2, "embed_batch_size": 32, "corpora": {"locomo": {"runs": [run]}}})
    assert ("the most floor/import this machine allows with this start-up: floor / (start-up 6.2 s + encoding "
            "alone) = 0.38") in table


def test_the_steady_state_is_the_rate_after_the_first_minute():
    # 100 documents in the first minute, then 300 over the next 30 s: 10 a second
    landings = [i * 0.6 for i in range(100)] + [60 + (i + 1) * 0.1 for i in range(300)]
    assert imports.steady_state(landings) == 300 / 30.0
    assert imports.steady_state([1.0, 2.0, 59.0]) is None         # all within the first minute
    assert imports.steady_state([1.0, 61.0, 61.0]) is None        # one landing time after it: no rate


def test_the_notes_are_projected_to_a_million_documents_here_and_on_a_gpu_node(tmp_path: Path):
    run = {"documents": 10000, "pieces": 30000, "chunks": 12000, "claims": 40000, "import_seconds": 900.0,
           "exit_seconds": 905.0, "floor_seconds": 450.0, "floor_execution": "onnx-int8",
           "floor_timings": {"onnx-int8": 450.0}, "execution": "onnx-int8", "ratio": 0.5, "exit_ratio": 0.497,
           "startup_seconds": 8.0, "pipeline_seconds": 850.0, "driver_peak_rss_mib": 300.0,
           "stage_seconds": {"embed": 700.0}, "facts_seconds": {}, "texts_embedded": {}, "vectors_not_embedded": {},
           "steady_docs_per_second": 12.5, "cpu_seconds": 1700.0, "cpu_seconds_per_doc": 0.17,
           "cpu_seconds_per_doc_outside_embedder": 0.03}
    results = {"threads": 2, "embed_batch_size": 32, "corpora": {"notes": {"runs": [run]}}}
    assert "documents at this steady state: 22.2 h on this machine; one GPU node: not projected" in (
        imports.render(results))
    gpu_figures = {"corpora": {"notes": {"runs": [dict(run, documents=2000, steady_docs_per_second=None),
                                                  dict(run, steady_docs_per_second=250.0)]}}}
    results["gpu"] = imports.gpu_projection(gpu_figures)
    assert ("1,000,000 documents at this steady state: 22.2 h on this machine; one GPU node: 250.0 documents/s "
            "measured at 10000 documents, 1.1 h") in imports.render(results)
    with pytest.raises(ValueError, match="no run of generated notes there reached a steady state"):
        imports.gpu_projection({"corpora": {"notes": {"runs": [dict(run, steady_docs_per_second=None)]}}})
    # a file that is missing, not JSON or not a bench's figures ends the command by its name
    (tmp_path / "bad.json").write_text('{"corpora": ')
    (tmp_path / "list.json").write_text("[1, 2]")
    for name in ("missing.json", "bad.json", "list.json"):
        with pytest.raises(SystemExit, match=f"--gpu-figures {tmp_path / name}: "):
            imports.read_gpu_figures(tmp_path / name)
    (tmp_path / "gpu.json").write_text(json.dumps(gpu_figures))
    assert imports.read_gpu_figures(tmp_path / "gpu.json") == results["gpu"]


def _floors(tmp_path: Path, monkeypatch, used, seconds: dict[str, float], *, gpu: bool = False) -> tuple[dict, list]:
    """`_floors` over one document on a machine that offers OFFERED (or a GPU), with the import's
    model `used` and each execution's seconds per piece given (no model is loaded); and the
    (execution, pieces) it encoded."""
    (tmp_path / "a.md").write_text("a" * 2500)
    monkeypatch.setattr(imports.runtime, "embedding_model", lambda settings, dsn, gpu=False: used)
    monkeypatch.setattr(imports, "_gpu", lambda: gpu)
    monkeypatch.setattr(calibration, "candidates", lambda path: list(OFFERED))
    monkeypatch.setattr(imports, "FLOOR_SAMPLE", 2)
    encoded = []

    def encode_seconds(pieces, ref, threads, batch_size):
        encoded.append((ref.execution, len(pieces)))
        return seconds[ref.execution] * len(pieces)

    monkeypatch.setattr(imports, "_encode_seconds", encode_seconds)
    return imports._floors(tmp_path, 2, 32), encoded


OFFERED = ("torch", "onnx", "torch-bf16", "onnx-int8")


def test_the_floor_is_the_fastest_execution_on_the_same_pieces_or_the_imports_own_where_faster(
        tmp_path, monkeypatch):
    used = resolve_model(DEFAULT_MODEL, "onnx-int8")
    seconds = {"torch": 3.0, "onnx": 2.0, "torch-bf16": 1.0, "onnx-int8": 1.5}
    floors, encoded = _floors(tmp_path, monkeypatch, used, seconds)
    # every execution on a sample of 2 pieces, then the fastest and the import's own on all 3
    assert encoded == [(e, 2) for e in OFFERED] + [("torch-bf16", 3), ("onnx-int8", 3)]
    assert floors["floor_execution"] == "torch-bf16" and floors["floor_seconds"] == 3.0
    assert floors["execution"] == "onnx-int8" and floors["floor_timings"] == {"torch-bf16": 3.0, "onnx-int8": 4.5}
    assert floors["floor_sample_seconds"] == {e: 2 * s for e, s in seconds.items()}


def test_the_imports_own_execution_is_the_floor_where_it_is_the_fastest(tmp_path, monkeypatch):
    used = resolve_model(DEFAULT_MODEL, "torch-bf16")   # set by hand: the floor still tries every execution
    floors, encoded = _floors(tmp_path, monkeypatch, used, {"torch": 3.0, "onnx": 2.0, "torch-bf16": 0.5,
                                                            "onnx-int8": 1.0})
    assert encoded[-1] == ("torch-bf16", 3) and len(encoded) == 5
    assert floors["floor_execution"] == "torch-bf16" and floors["floor_timings"] == {"torch-bf16": 1.5}


def test_on_a_gpu_the_floor_is_torch(tmp_path, monkeypatch):
    floors, encoded = _floors(tmp_path, monkeypatch, resolve_model(DEFAULT_MODEL, "torch"), {"torch": 3.0},
                              gpu=True)
    assert encoded == [("torch", 3)] and floors["floor_timings"] == {"torch": 9.0}


def test_the_tree_cpu_counts_the_grandchildren_and_keeps_what_an_ended_one_spent():
    import subprocess
    import sys
    import time

    import psutil

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
    # a child that starts a burning grandchild, waits for it, then burns as much itself
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', "
                               f"{burn!r}])\n{burn}time.sleep(0.5)\n"])
    cpu = cpu_use.TreeCpu()
    while parent.poll() is None:
        cpu.sample(psutil.Process(parent.pid))
        time.sleep(0.02)
    assert 0.8 <= cpu.seconds < 2.0, cpu.seconds


def test_the_landings_are_each_version_of_the_last_import_in_seconds_from_its_start(memory, ray_local, tmp_path):
    from sql.read import bench_queries
    from sql.store import authority
    from tests.support.memory import do_import

    imports.write_corpus(tmp_path / "notes", 6)
    do_import(memory, tmp_path / "notes", batch_size=2)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "late.md").write_text("Dana joined the billing team in May 2026.\n")
    do_import(memory, tmp_path / "more")
    with authority.connect(memory.dsn) as conn:
        landings = bench_queries.last_import_landings(conn)
    assert len(landings) == 1 and 0 <= landings[0] < 60   # the last import's one version, not the first's six


class _Process:
    def __init__(self, pid: int, cmdline: str, name: str = "python") -> None:
        self.pid, self._cmdline, self._name = pid, cmdline, name

    def cmdline(self) -> list[str]:
        return self._cmdline.split(" ") if self._cmdline else []

    def name(self) -> str:
        return self._name


def test_each_process_of_an_import_is_given_what_it_is():
    driver, server = _Process(10, "python -m jobs.import_corpus notes"), _Process(20, "postgres -D pg", "postgres")

    def of(process: _Process, root: _Process = driver, names: dict[int, str] | None = None) -> str:
        return cpu_use.import_component(process, root, names or {})

    assert of(driver) == cpu_use.DRIVER
    assert of(_Process(11, "ray::MapBatches(Embed)")) == of(_Process(12, "python .../default_worker.py")) == (
        cpu_use.RAY_WORKERS)
    assert of(_Process(13, "ray::_StatsActor.update_execution_metrics")) == "Ray: Ray Data's actors"
    assert of(_Process(14, ".../raylet/raylet --raylet_socket_name=x")) == "Ray: raylet"
    assert of(_Process(15, "ray-dashboard-NodeHead-0 (python -B -c from multiprocessing.forkserver ...)")) == (
        "Ray: dashboard and its agents")
    names = cpu_use.postgres_components(_Rows([(21, None, "corpusmem write", "client backend"),
                                               (22, None, "corpusmem run 1234", "client backend"),
                                               (23, 22, "", "parallel worker"),
                                               (24, None, "", "checkpointer")]))
    assert of(server, server) == cpu_use.POSTGRES_BACKGROUND
    assert of(_Process(21, "postgres: postgres corpusmem [local] COPY", "postgres"), server, names) == (
        "PostgreSQL: the pipeline's writes")
    assert names[23] == names[22] and "vector indexes" in names[22]
    # a parallel worker that ended before anyone asked is its leader's, from its title
    assert of(_Process(25, "postgres: parallel worker for PID 22", "postgres"), server, names) == names[22]
    assert of(_Process(26, "postgres: postgres corpusmem [local] idle", "postgres"), server, names) == (
        cpu_use.POSTGRES_UNNAMED)
    assert of(_Process(27, "postgres: autovacuum worker corpusmem", "postgres"), server, names) == (
        cpu_use.POSTGRES_BACKGROUND)


class _Rows:
    def __init__(self, rows: list[tuple]) -> None:
        self._rows = rows

    def execute(self, _sql: str) -> _Rows:
        return self

    def fetchall(self) -> list[tuple]:
        return self._rows


def test_the_components_split_the_workers_into_their_stages_and_sum_to_the_whole():
    by_process = {cpu_use.RAY_WORKERS: 100.0, "Ray: raylet": 5.0, "PostgreSQL: the facts phase": 7.0}
    parts = imports.cpu_components(by_process, {"embed": 60.0, "write": 0.0, "extract": 10.0}, {"resolve": 12.0})
    assert parts == {"stage embed": 60.0, imports.AROUND_THE_STAGES: 18.0, "facts resolve": 12.0,
                     "stage extract": 10.0, "PostgreSQL: the facts phase": 7.0, "Ray: raylet": 5.0}
    assert sum(parts.values()) == sum(by_process.values())


def test_the_tree_memory_counts_a_grandchilds_private_pages_and_its_title():
    import subprocess
    import sys
    import time

    import psutil

    from jobs.bench import memory_use

    hold = "import time\nheld = b'x' * (80 * 2**20)\nprint('ready', flush=True)\ntime.sleep(30)\n"
    # a child that starts a grandchild holding 80 MiB of its own pages
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', "
                               f"{hold!r}, 'holder'])\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        memory = memory_use.TreeMemory()
        memory.sample(0.0, psutil.Process(parent.pid))
        time.sleep(0.1)
        memory.sample(5.0, psutil.Process(parent.pid))
    finally:
        for child in psutil.Process(parent.pid).children(recursive=True):
            child.kill()
        parent.kill()
        parent.wait()
    summary = memory.summary()
    (title, held), *_ = summary["largest_processes_mib"]
    assert title == " ".join([sys.executable, "-c", hold])[:48] and 80 <= held < 120, summary
    # the root is the driver, its child "other processes of the import": the grandchild's 80 MiB is there
    assert summary["by_component_mib"][cpu_use.DRIVER] < 80 <= summary["by_component_mib"]["other processes of the import"]
    assert [at for at, _ in summary["series_mib"]] == [0.0, 5.0] and summary["peak_in_use_mib"] >= 0


def test_the_table_benchmark_writes_the_same_csv_of_the_size_asked(tmp_path: Path):
    import csv

    from jobs.bench import table

    rows = table.write_csv(tmp_path / "a.csv", 0.05)
    table.write_csv(tmp_path / "b.csv", 0.05)
    text = (tmp_path / "a.csv").read_text()
    assert 50_000 <= len(text.encode()) < 50_300 and text == (tmp_path / "b.csv").read_text()
    read = list(csv.reader(text.splitlines()))
    assert read[0] == ["id", "customer", "date", "note"] and len(read) == rows + 1
    assert all(len(row) == 4 for row in read)
