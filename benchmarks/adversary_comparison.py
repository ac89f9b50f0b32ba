"""De-identify the same test documents against different re-identifiers and evaluate every output with all of them:
the library's `deid_nb.nn_deid.reidentifier_levers.compare_adversaries` (notebook 17b_reidentifier_levers) from the command line.

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

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.data import load_dataset
from deid_nb.nn_deid.registry import EVALUATION_ENSEMBLE as ENSEMBLE
from deid_nb.nn_deid.reidentifier_levers import compare_adversaries, load_measured_reidentifier


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
        name: load_measured_reidentifier(name, dataset, args.zero_shot_neural)[0]
        for name in dict.fromkeys([*args.adversaries, *args.evaluators, *ENSEMBLE])
    }
    results = compare_adversaries(people, reidentifiers, args.adversaries, args.evaluators, ENSEMBLE, args.k)
    write_results(results, f"adversary_comparison_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
