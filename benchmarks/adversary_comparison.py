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

import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb import metrics
from deid_nb.data import load_dataset
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.registry import EVALUATION_ENSEMBLE as ENSEMBLE, load_reidentifier


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument("--documents", type=int, default=30, help="the first N test documents")
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--adversaries", nargs="+", default=["nn_uniform", "nn_uniform_bm25"])
    parser.add_argument("--evaluators", nargs="+", default=[*ENSEMBLE, "nn_uniform_bm25"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=None, help="JSON results (default: <artifacts>/benchmarks/adversary_comparison_<dataset>.json)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dataset = load_dataset(args.dataset)
    people = dataset.split("test")[:args.documents]
    ids = [p.person_id for p in people]
    reidentifiers = {name: load_reidentifier(name, dataset) for name in dict.fromkeys([*args.adversaries, *args.evaluators, *ENSEMBLE])}
    results = []
    for adversary in args.adversaries:
        started = time.perf_counter()
        texts = [o.text for o in deidentify(people, reidentifiers[adversary], args.k, search="approximate")]
        ranks = metrics.reidentification_ranks(texts, ids, reidentifiers)  # every model once
        evaluated = metrics.reidentification_summary(ranks)
        ensemble = metrics.reidentification_summary(ranks[ranks.reidentifier.isin(ENSEMBLE)])
        row = {"adversary": adversary, "k": args.k, "documents": len(people),
               "percent_masked": round(metrics.percent_masked(texts, [p.document for p in people], average="corpus"), 1),
               "top1": {n: round(evaluated[f"{n}_top1"], 1) for n in args.evaluators},
               "ensemble_reid": round(ensemble["ensemble_reid"], 1), "seconds": round(time.perf_counter() - started, 1)}
        results.append(row)
        print(f"hiding from {adversary}: {row['percent_masked']}% of words masked; top-1 % "
              + ", ".join(f"{n} {v}" for n, v in row["top1"].items())
              + f"; ensemble ({', '.join(ENSEMBLE)}) {row['ensemble_reid']}   ({row['seconds']} s)", flush=True)
    write_results(results, f"adversary_comparison_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
