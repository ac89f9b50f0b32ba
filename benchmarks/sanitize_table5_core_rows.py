"""Table 5's core rows on the 100 annotated bios with the default models, without the heavy indicators.

Mask all, LM probabilities (SmolLM2 features, logistic regression, 5-fold CV by document), the replay rows (trained on
the paper's 453-bio BERT-large span rows), perturbation on the first 23 documents (cached by
benchmarks/sanitize_perturbation.py) beside mask-all on the same documents, and the stacked ensemble (100 trees).
TAB metrics with the md tagger; P_w is the SmolLM2 surprisal weighting. A quick way to the headline numbers on 2 shared
cores when the full notebook (nbs/36_table5_indicators.ipynb, size "default") does not fit the time budget.

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/sanitize_table5_core_rows.py
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

from deid_nb.causal_lm import load_causal_lm
from deid_nb.sanitize.context_indicators import PerturbationIndicator
from deid_nb.sanitize.lm_scores import SurprisalWeights, document_scores, span_features
from deid_nb.sanitize.risk_indicators import (
    cross_validate,
    document_folds,
    gold_span_table,
    masks_from_decisions,
)
from deid_nb.sanitize.span_indicators import LMProbabilityIndicator, ReplayIndicator
from deid_nb.sanitize.tab_corpus import load_wiki_annotated
from deid_nb.sanitize.tab_metrics import TabScorer, table_row
from results import write_results  # this script's folder is on sys.path when it is run


def main():
    torch.set_num_threads(1)
    started, results = time.time(), {}
    docs = load_wiki_annotated()
    texts = {d.doc_id: d.text for d in docs}
    model, tokenizer = load_causal_lm("smollm2")
    spans = span_features(gold_span_table(docs), texts, document_scores(model, tokenizer, texts))
    weights, scorer, folds = (
        SurprisalWeights(model, tokenizer, texts),
        TabScorer(docs, spacy_model="md"),
        document_folds(texts, 5, 0),
    )

    def record(name, decisions, scorer=scorer, documents=docs, rows=spans):
        results[name] = {
            k: round(v, 4)
            for k, v in table_row(
                scorer.scores(masks_from_decisions(documents, rows, decisions), weighting=weights)
            ).items()
        }
        results[name]["seconds_since_start"] = round(time.time() - started)
        print(name, results[name], flush=True)

    record("mask all", np.ones(len(spans), bool))
    record(
        "LM probabilities (SmolLM2, logistic regression, CV)",
        cross_validate(lambda: LMProbabilityIndicator("logistic"), docs, spans, folds).decision.to_numpy(),
    )
    record("LM probabilities replay (logistic regression)", ReplayIndicator("logistic").decide(docs, spans))
    record("LM probabilities replay (stacked, 100 trees)", ReplayIndicator("stacked", trees=100).decide(docs, spans))
    first = docs[:23]
    rows = spans[spans.doc_id.isin([d.doc_id for d in first])]
    scorer23 = TabScorer(first, spacy_model="md")
    record("mask all (first 23 documents)", np.ones(len(rows), bool), scorer23, first, rows)
    cv = cross_validate(
        lambda: PerturbationIndicator(model, tokenizer, "md"),
        first,
        rows,
        document_folds([d.doc_id for d in first], 5, 0),
    )
    record("perturbation (first 23 documents, CV)", cv.decision.to_numpy(), scorer23, first, rows)
    results["perturbation thresholds"] = sorted(set(cv.threshold.round(3).tolist()))
    record(
        "LM probabilities (SmolLM2, stacked, 100 trees, CV)",
        cross_validate(lambda: LMProbabilityIndicator("stacked", trees=100), docs, spans, folds).decision.to_numpy(),
    )
    write_results(results, "sanitize_table5_core_rows")


if __name__ == "__main__":
    main()
