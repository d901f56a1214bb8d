"""What the timeline draws and folds away (the frame logic; drawing is tested on the example memory)."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from jobs import plots


def facts(n_dated: int, n_undated: int) -> pd.DataFrame:
    day = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows = [{"label": f"dated {i}", "status": "past", "valid_from": day, "valid_until": day, "evidence": i % 3,
             "ingested_at": day} for i in range(n_dated)]
    rows += [{"label": f"undated {i}", "status": "possible", "valid_from": pd.NaT, "valid_until": pd.NaT,
              "evidence": 5, "ingested_at": day} for i in range(n_undated)]
    return pd.DataFrame(rows)


def test_possible_facts_without_any_time_are_folded_unless_asked_for() -> None:
    drawn, left_out = plots.timeline_rows(facts(3, 4))
    assert list(drawn["label"]) == ["dated 0", "dated 1", "dated 2"] and left_out == {"undated": 4, "more": 0}
    drawn, left_out = plots.timeline_rows(facts(3, 4), undated=True)
    assert len(drawn) == 7 and left_out == {"undated": 0, "more": 0}


def test_at_most_the_row_budget_is_drawn_dated_and_best_evidenced_first_in_their_order() -> None:
    drawn, left_out = plots.timeline_rows(facts(60, 10), rows=40, undated=True)
    assert len(drawn) == 40 and left_out == {"undated": 0, "more": 30}
    assert not drawn["label"].str.startswith("undated").any()      # dated facts outrank undated ones
    assert list(drawn.index) == sorted(drawn.index)                   # drawn in their own order
    assert (drawn["evidence"] >= 1).sum() == 40                       # the best evidenced of the dated
