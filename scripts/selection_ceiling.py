"""How well can any reading of a turn's words tell the turns LoCoMo's observations cite from the others?

`corpusmem bench recall` reports Selection against the observations: the share of cited turns
that got a live claim, and the share of the other turns. This script asks what a learned reader
of the same words could reach, as a ceiling for any rule: a TF-IDF logistic regression over each
turn's text, trained on two conversations and scored on the third, reports its ROC AUC and the
share of cited turns it keeps when it keeps at most 40 % of the other turns.

    .venv/bin/python scripts/selection_ceiling.py ../shared/eval/locomo
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.bench import locomo  # noqa: E402

OTHER_SHARE = 0.40


def main(folder: Path) -> None:
    sessions, _ = locomo.read_folder(folder)
    cited = {(p.stem, t) for p in sorted(folder.glob("*.json")) for t in locomo.observed_turns(p)}
    turns = [t for s in sessions for t in s.turns]
    texts = [t.text for t in turns]
    label = np.array([(t.conversation, t.dia_id) in cited for t in turns])
    conversation = np.array([t.conversation for t in turns])
    features = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit_transform(texts)
    print(f"{'held out':>10} {'AUC':>6} {'cited kept at other ≤ 0.40':>28}")
    for held in sorted(set(conversation)):
        train, test = conversation != held, conversation == held
        model = LogisticRegression(C=2, max_iter=2000).fit(features[train], label[train])
        score, truth = model.predict_proba(features[test])[:, 1], label[test]
        threshold = np.quantile(score[~truth], 1 - OTHER_SHARE)
        kept = score >= threshold
        print(f"{held:>10} {roc_auc_score(truth, score):>6.3f} {kept[truth].mean():>28.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/eval/locomo"))
