"""De-identify the same test documents against different re-identifiers and evaluate every output with all of them.

For each adversary (a registry name, deid_nb.nn_deid.registry) the script runs `deid_nb.nn_deid.deidentify.deidentify`
(approximate search, K-anonymity w.r.t. that model) on the first N test documents, then prints % of words masked, each
evaluator's top-1 % on the de-identified documents, and the evaluation ensemble's re-identification (the experiments'
`EVALUATION_ENSEMBLE`: re-identified when any of its models ranks the person first; deid_nb.metrics).

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/adversary_comparison.py --dataset wikibio_2000 --documents 30 \
        --adversaries nn_uniform nn_uniform_bm25
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

import reid_accuracy  # the re-identifiers, zero-shot if asked (this script's folder is on sys.path when it is run)
from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb import metrics
from deid_nb.data import load_dataset
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.registry import EVALUATION_ENSEMBLE as ENSEMBLE


def compare_adversaries(
    people, reidentifiers: dict, adversaries, evaluators, ensemble=ENSEMBLE, k: int = 1
) -> list[dict]:
    "One row per adversary: `deidentify` `people` against it, then % masked, each evaluator's top-1 % and the ensemble's re-identification."
    ids, results = [p.person_id for p in people], []
    for adversary in adversaries:
        started = time.perf_counter()
        outputs = deidentify(people, reidentifiers[adversary], k, search="approximate")
        texts = [o.text for o in outputs]
        ranks = metrics.reidentification_ranks(
            texts, ids, {n: metrics.FirstPlaces(r) for n, r in reidentifiers.items()}
        )  # every model once; first places exact
        evaluated = metrics.reidentification_summary(ranks)
        summary = metrics.reidentification_summary(ranks[ranks.reidentifier.isin(ensemble)])
        row = {
            "adversary": adversary,
            "k": k,
            "documents": len(people),
            "percent_masked": round(metrics.percent_masked(texts, [p.document for p in people], average="corpus"), 1),
            "top1": {n: round(evaluated[f"{n}_top1"], 1) for n in evaluators},
            "ensemble_reid": round(summary["ensemble_reid"], 1),
            "certified": round(100 * float(np.mean([o.certificate.goal_met for o in outputs])), 1),
            "seconds": round(time.perf_counter() - started, 1),
        }
        results.append(row)
        print(
            f"hiding from {adversary}: {row['percent_masked']}% of words masked; top-1 % "
            + ", ".join(f"{n} {v}" for n, v in row["top1"].items())
            + f"; ensemble ({', '.join(ensemble)}) {row['ensemble_reid']}   ({row['seconds']} s)",
            flush=True,
        )
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument(
        "--max-people", type=int, default=None, help="candidate pool: the dataset's first N people (default: all)"
    )
    parser.add_argument("--documents", type=int, default=30, help="the first N test documents")
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--adversaries", nargs="+", default=["nn_uniform", "nn_uniform_bm25"])
    parser.add_argument("--evaluators", nargs="+", default=[*ENSEMBLE, "nn_uniform_bm25"])
    parser.add_argument(
        "--zero-shot-neural",
        action="store_true",
        help="the untrained MiniLM in place of every neural model (no training)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--output",
        default=None,
        help="JSON results (default: <artifacts>/benchmarks/adversary_comparison_<dataset>.json)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dataset = load_dataset(args.dataset, max_people=args.max_people)
    people = dataset.split("test")[: args.documents]
    reidentifiers = {
        name: reid_accuracy.load_model(name, dataset, args.zero_shot_neural)[0]
        for name in dict.fromkeys([*args.adversaries, *args.evaluators, *ENSEMBLE])
    }
    results = compare_adversaries(people, reidentifiers, args.adversaries, args.evaluators, ENSEMBLE, args.k)
    write_results(results, f"adversary_comparison_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
