"""The rows of an import: what a stage records of the time it spent on them."""

from __future__ import annotations

import time

from pipeline import records


def test_a_batch_shares_its_busy_and_cpu_seconds_among_its_rows():
    rows = [records.new_row(item=f"{i}.md") for i in range(4)]
    started = records.clock()
    spin = time.thread_time()
    while time.thread_time() - spin < 0.2:
        pass
    time.sleep(0.2)   # waiting is busy time, not CPU
    records.share_seconds(rows, "chunk", started)
    busy, cpu = sum(r["s_chunk"] for r in rows), sum(r["c_chunk"] for r in rows)
    assert all(r["s_chunk"] == rows[0]["s_chunk"] and r["c_chunk"] == rows[0]["c_chunk"] for r in rows)
    assert busy >= 0.4 and cpu >= 0.2
    assert records.to_table(rows).column("c_chunk").to_pylist() == [r["c_chunk"] for r in rows]
