"""Speed of NN DeID (the library's `deid_nb.nn_deid.search_speed`, notebook 17c_search_speed, from the command line): stock TextAttack greedy vs the fast exact search vs the approximate search (also searching with the
reduced-precision encoder, `deidentify(..., fast=True)`), all through `deidentify`.

All searches run on the same re-identifier and the same test documents (each cut to the model's window, as the paper did:
`long_documents="truncate"`). Each search runs once per document, to the largest K; every smaller K is read off its
trajectory (`Deidentified.text_at_k`) and its rank is re-verified by scoring the text again.

    DEID_NB_DATA=/work/shared/data .venv/bin/python benchmarks/search_speed.py --n-docs 20 --k-values 1 10 --output speed.json

The approximate search uses `--ranking` ("auto" by default: the model's best white-box estimate, the last-layer one for
BERT-style bi-encoders) with a shortlist of `--top-m` candidates per step and pruning as `--prune` says (auto: the ranking's
default). Prints documents/minute for each search and the ratio to stock greedy, checks that the exact search's masks equal
TextAttack's, and tabulates % of words masked, the certified share and the re-verified ranks at each K.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pandas as pd
import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.core import get_logger
from deid_nb.data import load_dataset
from deid_nb.nn_deid.registry import REIDENTIFIERS, ZERO_SHOT, load_reidentifier
from deid_nb.nn_deid.approximate_search import APPROXIMATE_RANKINGS
from deid_nb.nn_deid.search_speed import measure_search_speed

logger = get_logger("deid_nb.benchmarks")


def load_model(name: str, dataset):
    "The trained re-identifier `name` if it exists (ZERO_SHOT: the untrained MiniLM), else the zero-shot MiniLM (said so)."
    if name == ZERO_SHOT:
        return load_reidentifier(ZERO_SHOT, dataset), "zero-shot MiniLM (untrained)"
    try:
        return load_reidentifier(name, dataset, train_if_missing=False, progress=False), f"trained {name}"
    except FileNotFoundError as error:
        logger.warning(f"{error}; using the zero-shot MiniLM bi-encoder instead")
        return load_reidentifier(ZERO_SHOT, dataset), f"zero-shot MiniLM ({name} not trained yet)"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument(
        "--model",
        default="nn_uniform",
        help=f"registry name ({sorted(REIDENTIFIERS)}); the zero-shot MiniLM ({ZERO_SHOT}) if not trained yet",
    )
    parser.add_argument("--n-docs", type=int, default=12, help="the first N test documents")
    parser.add_argument(
        "--max-people", type=int, default=None, help="candidate pool: the dataset's first N people (default: all)"
    )
    parser.add_argument("--k-values", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument(
        "--top-m", type=int, default=None, help="shortlist size (default: 1 for the last-layer ranking, else 3)"
    )
    parser.add_argument(
        "--prune",
        choices=["auto", "yes", "no"],
        default="auto",
        help="prune the approximate masks at every K of --k-values (auto: as the search's default for its ranking)",
    )
    parser.add_argument("--ranking", default="auto", choices=list(APPROXIMATE_RANKINGS))
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (1: on a shared 2-core machine, 2 threads can stall ~1 s per forward pass)",
    )
    parser.add_argument(
        "--skip-stock", action="store_true", help="time only the fast paths (exact greedy is then the reference)"
    )
    parser.add_argument("--skip-single", action="store_true", help="skip the approximate search one document at a time")
    parser.add_argument(
        "--skip-fast", action="store_true", help="skip the approximate search with the reduced-precision encoder"
    )
    parser.add_argument(
        "--prefilter",
        type=int,
        default=32,
        help="also search (fast) with only the pooled estimate's best N candidates ranked by the last layer (0: skip)",
    )
    parser.add_argument(
        "--output", default=None, help="JSON results (default: <artifacts>/benchmarks/search_speed_<dataset>.json)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dataset = load_dataset(args.dataset, max_people=args.max_people)
    reidentifier, model_note = load_model(args.model, dataset)
    people = dataset.split("test")[: args.n_docs]
    print(
        f"re-identifier: {reidentifier!r} ({model_note}); {len(people)} {args.dataset} test documents (cut to the model's window), "
        f"K up to {max(args.k_values)}, torch threads {args.threads}",
        flush=True,
    )
    results = measure_search_speed(
        reidentifier,
        people,
        args.k_values,
        args.ranking,
        args.top_m,
        args.prune,
        args.batch_size,
        not args.skip_stock,
        not args.skip_single,
        not args.skip_fast,
        args.prefilter or None,
    )
    results.update(dataset=args.dataset, model=args.model, model_note=model_note)
    if results["exact_equals_stock"] is not None:
        print(f"exact masks identical to TextAttack greedy: {results['exact_equals_stock']}/{len(people)} documents")
    print(
        "\nSpeed (wall clock; other jobs may share the CPU):\n"
        + pd.DataFrame(results["speed"]).round(2).to_string(index=False)
    )
    per_k = pd.DataFrame(results["per_k"])
    print(
        "\nMasking and privacy at each K (read off one search per document; ranks re-verified):\n"
        + per_k.round(3).to_string(index=False)
    )
    write_results(results, f"search_speed_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
