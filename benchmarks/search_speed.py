"""Speed of NN DeID: stock TextAttack greedy vs the fast exact search vs the approximate search (also searching with the
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
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pandas as pd
import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.core import get_artifacts_dir, get_logger
from deid_nb.data import load_dataset
from deid_nb.metrics import percent_masked
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.nn_deid.registry import REIDENTIFIERS, ZERO_SHOT, load_reidentifier, zero_shot_model
from deid_nb.nn_deid.approximate_search import APPROXIMATE_RANKINGS, approximate_defaults, resolve_ranking
from deid_nb.nn_deid.textattack import textattack_search

logger = get_logger("deid_nb.benchmarks")


def zero_shot(dataset) -> NeuralReidentifier:
    "The registry's zero-shot MiniLM over all of `dataset`'s people, its profile embeddings cached in the artifacts directory."
    return NeuralReidentifier(
        zero_shot_model(), dataset.people, ZERO_SHOT, cache_dir=get_artifacts_dir() / "profile_cache"
    )


def load_model(name: str, dataset):
    "The trained re-identifier `name` if it exists ('zero_shot': the untrained MiniLM), else the zero-shot MiniLM (said so)."
    if name == "zero_shot":
        return zero_shot(dataset), "zero-shot MiniLM (untrained)"
    try:
        return load_reidentifier(name, dataset, train_if_missing=False, progress=False), f"trained {name}"
    except FileNotFoundError as error:
        logger.warning(f"{error}; using the zero-shot MiniLM bi-encoder instead")
        return zero_shot(dataset), f"zero-shot MiniLM ({name} not trained yet)"


def timed(people, reidentifier, max_k: int, one_at_a_time: bool, **search):
    "`deidentify` results for every person (truncated to the window, as the paper) and the seconds it took."
    started = time.perf_counter()
    batches = [[p] for p in people] if one_at_a_time else [people]
    results = [
        r for batch in batches for r in deidentify(batch, reidentifier, max_k, long_documents="truncate", **search)
    ]
    return results, time.perf_counter() - started


def per_k_rows(label: str, results, reidentifier, k_values) -> list[dict]:
    "% of words masked (document average), share of documents certified, and re-verified ranks at each K."
    originals, ids = [r.trajectories[0].document for r in results], [r.certificate.person_id for r in results]
    rows = []
    for k in k_values:
        texts = [r.text_at_k(k) for r in results]
        verified = reidentifier.ranks(texts, ids)
        rows.append(
            dict(
                search=label,
                k=k,
                percent_masked=percent_masked(texts, originals),
                certified=float(np.mean(verified >= k)),
                top1_reidentified=float(np.mean(verified == 0)),
                median_verified_rank=float(np.median(verified)),
            )
        )
    return rows


def same_steps(a, b) -> bool:
    "Whether two trajectories masked the same words at the same positions with the same ranks."
    return [(s.word, s.positions, s.rank) for s in a.steps] == [(s.word, s.positions, s.rank) for s in b.steps]


def measure(
    reidentifier,
    people,
    k_values,
    ranking: str = "auto",
    top_m: int | None = None,
    prune: str = "auto",
    batch_size: int = 256,
    stock: bool = True,
    one_at_a_time: bool = True,
    fast: bool = True,
    prefilter: int | None = 32,
) -> dict:
    "Run every search on `people` to max(k_values); {'speed': rows, 'per_k': rows, 'exact_equals_stock': n or None, ...}."
    max_k, ranking = max(k_values), resolve_ranking(reidentifier, ranking)
    defaults = approximate_defaults(ranking)
    top_m = defaults["top_m"] if top_m is None else top_m
    pruned = prune == "yes" or (prune == "auto" and defaults["prune"])
    label = f"approximate ({ranking}, top_m={top_m}{', pruned' if pruned else ''})"
    approximate = dict(
        search="approximate",
        ranking=ranking,
        top_m=top_m,
        prune=list(k_values) if pruned else False,
        batch_size=batch_size,
    )
    runs = {}
    if stock:
        runs["textattack greedy"] = timed(
            people, reidentifier, max_k, True, search=textattack_search, batch_size=batch_size
        )
    runs["exact greedy"] = timed(people, reidentifier, max_k, True, search="greedy", batch_size=batch_size)
    if one_at_a_time:
        runs[f"{label}, one document at a time"] = timed(people, reidentifier, max_k, True, **approximate)
    runs[f"{label}, {len(people)} documents in lockstep"] = timed(people, reidentifier, max_k, False, **approximate)
    if (
        fast
    ):  # the search ranks and steps with the reduced-precision copy; every certificate is re-checked in full precision
        stand_in = reidentifier.reduced_precision().name
        runs[f"{label}, lockstep, searching with {stand_in}"] = timed(
            people, reidentifier, max_k, False, fast=True, **approximate
        )
        if (
            prefilter and ranking == "last_layer"
        ):  # only the pooled estimate's best `prefilter` candidates get the last-layer estimate
            runs[f"{label}, lockstep, searching with {stand_in}, pooled prefilter {prefilter}"] = timed(
                people, reidentifier, max_k, False, fast=True, prefilter=prefilter, **approximate
            )
    reference = runs.get("textattack greedy", runs["exact greedy"])[1]
    speed = [
        dict(
            search=name,
            seconds=seconds,
            docs_per_min=60 * len(people) / seconds,
            speedup_vs_stock=reference / seconds,
            model_calls_per_doc=float(np.mean([sum(t.model_calls for t in r.trajectories) for r in results])),
            certified_at_max_k=float(np.mean([r.certificate.goal_met for r in results])),
        )
        for name, (results, seconds) in runs.items()
    ]
    per_k = [row for name, (results, _) in runs.items() for row in per_k_rows(name, results, reidentifier, k_values)]
    equal = (
        sum(
            same_steps(a.trajectories[0], b.trajectories[0])
            for a, b in zip(runs["textattack greedy"][0], runs["exact greedy"][0])
        )
        if stock
        else None
    )
    return {
        "reidentifier": repr(reidentifier),
        "documents": len(people),
        "k_values": list(k_values),
        "torch_threads": torch.get_num_threads(),
        "reference": "textattack greedy" if stock else "exact greedy",
        "exact_equals_stock": equal,
        "speed": speed,
        "per_k": per_k,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument(
        "--model",
        default="nn_uniform",
        help=f"registry name ({sorted(REIDENTIFIERS)}) or 'zero_shot'; the zero-shot MiniLM if not trained yet",
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
    results = measure(
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
