"""Speed of NN DeID: stock TextAttack greedy vs the fast exact search vs the approximate search.

All three run on the same re-identifier and the same documents (each cut to the model's window, as the paper did).
Each search runs once per document, to the largest K; every smaller K is read off its trajectory.

    DEID_NB_DATA=/work/shared/data .venv/bin/python benchmarks/search_speed.py --n-docs 10 --ks 1 10

The approximate search (ranking `--ranking`, "auto" by default: the last-layer estimate for BERT-style bi-encoders) is pruned at every
K of `--ks` when `--prune yes`, or by default when its ranking is not the last-layer one; `--top-m` takes one
shortlist size or a schedule (e.g. `--top-m 1000 2`: every candidate at the first step, two after).

Prints documents/minute for each search and the ratios, checks that the exact search's masks equal TextAttack's,
and tabulates % words masked and the certified ranks at each K (re-verified by scoring the final texts again).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from deid_nb.core import get_artifacts_dir, get_logger
from deid_nb.data import load_dataset
from deid_nb.search import (APPROXIMATE_RANKINGS, approximate_defaults, approximate_search, approximate_search_many,
                            document_window, greedy_search, resolve_ranking, split_windows)
from deid_nb.search_textattack import textattack_search

logger = get_logger("deid_nb.benchmarks")


def load_model(name: str, dataset):
    "The trained re-identifier `name` if it exists, else the zero-shot MiniLM bi-encoder (said so)."
    from deid_nb.index import NeuralReidentifier, load_reidentifier
    from deid_nb.model import BiEncoder, BiEncoderConfig
    try:
        return load_reidentifier(name, dataset, train_if_missing=False, progress=False), f"trained {name}"
    except FileNotFoundError as error:
        logger.warning(f"{error}; using the zero-shot MiniLM bi-encoder instead")
        model = BiEncoder(BiEncoderConfig())
        cache = get_artifacts_dir() / "search_benchmark"
        return NeuralReidentifier(model, dataset.people, "minilm_zero_shot", cache_dir=cache), "zero-shot MiniLM (untrained)"


def run(search, documents, ids, reidentifier, **kwargs):
    "Trajectories of `search` on every document, and the seconds it took."
    start, trajectories = time.perf_counter(), []
    for n, (document, true_id) in enumerate(zip(documents, ids), start=1):
        trajectories.append(search(document, true_id, reidentifier, **kwargs))
        logger.info(f"{search.__name__}: {n}/{len(documents)} documents, {time.perf_counter() - start:.0f} s")
    return trajectories, time.perf_counter() - start


def per_k_table(name, trajectories, reidentifier, ks):
    "% words masked, docs reaching K, and re-verified ranks at each K."
    rows = []
    for k in ks:
        texts = [t.masked_text_at_k(k) for t in trajectories]
        verified = reidentifier.ranks(texts, [t.true_id for t in trajectories])
        steps = [t.step_for_k(k) for t in trajectories]
        masked = [t.fraction_masked_at_k(k) for t in trajectories]  # pruned masks where recorded
        rows.append(dict(search=name, k=k, pct_masked=100 * np.mean(masked), reached_k=np.mean([s is not None for s in steps]),
                         verified_rank_ge_k=np.mean(verified >= k), top1_reidentified=np.mean(verified == 0),
                         median_verified_rank=float(np.median(verified))))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument("--model", default="nn_uniform", help="registry name (deid_nb.index); zero-shot MiniLM if untrained")
    parser.add_argument("--n-docs", type=int, default=12)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--top-m", type=int, nargs="+", default=None,
                        help="shortlist size, or a schedule per step (default: 1 for the last-layer ranking, else 3)")
    parser.add_argument("--prune", choices=["auto", "yes", "no"], default="auto",
                        help="prune the approximate masks at every K of --ks (auto: as the search's default for its ranking)")
    parser.add_argument("--skip-single", action="store_true", help="skip the approximate search one document at a time")
    parser.add_argument("--ranking", default="auto", choices=list(APPROXIMATE_RANKINGS))
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: on a shared 2-core machine, 2 threads stall ~1 s per forward pass)")
    parser.add_argument("--skip-stock", action="store_true", help="time only the fast paths")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    dataset = load_dataset(args.dataset)
    reidentifier, model_note = load_model(args.model, dataset)
    window = document_window(reidentifier)
    people = dataset.split("test")[:args.n_docs]
    documents = [split_windows(p.document, *window)[0] if window else p.document for p in people]
    ids = [p.person_id for p in people]
    max_k = max(args.ks)
    print(f"re-identifier: {reidentifier!r} ({model_note}); {len(reidentifier.candidate_ids)} candidates")
    print(f"{len(documents)} {args.dataset} test documents (cut to the model's window), K up to {max_k}, "
          f"torch threads {args.threads}")

    results, seconds = {}, {}
    if not args.skip_stock:
        results["textattack greedy"], seconds["textattack greedy"] = run(
            textattack_search, documents, ids, reidentifier, max_k=max_k, batch_size=args.batch_size)
    results["exact"], seconds["exact"] = run(greedy_search, documents, ids, reidentifier, max_k=max_k,
                                             batch_size=args.batch_size)
    ranking = resolve_ranking(reidentifier, args.ranking)
    top_m = None if args.top_m is None else args.top_m[0] if len(args.top_m) == 1 else tuple(args.top_m)
    defaults = approximate_defaults(ranking)
    top_m = defaults["top_m"] if top_m is None else top_m
    pruned = args.prune == "yes" or (args.prune == "auto" and defaults["prune"])
    prune = list(args.ks) if pruned else False
    approximate = dict(max_k=max_k, top_m=top_m, ranking=ranking, batch_size=args.batch_size, prune=prune)
    label = f"approximate ({ranking}, top_m={top_m}{', pruned' if prune else ''})"
    if not args.skip_single:
        single = f"{label}, one doc at a time"
        results[single], seconds[single] = run(approximate_search, documents, ids, reidentifier, **approximate)
    name = f"{label}, {len(documents)} docs in lockstep"
    start = time.perf_counter()
    results[name] = approximate_search_many(documents, ids, reidentifier, **approximate)
    seconds[name] = time.perf_counter() - start

    if "textattack greedy" in results:
        same = [[(s.word, s.positions, s.rank) for s in a.steps] == [(s.word, s.positions, s.rank) for s in b.steps]
                for a, b in zip(results["textattack greedy"], results["exact"])]
        print(f"exact masks identical to TextAttack greedy: {sum(same)}/{len(same)} documents")

    reference = seconds.get("textattack greedy", seconds["exact"])
    speed = pd.DataFrame([dict(search=n, seconds=round(s, 1), docs_per_min=round(60 * len(documents) / s, 2),
                               model_calls_per_doc=round(np.mean([t.model_calls for t in results[n]]), 1),
                               speedup_vs_stock=round(reference / s, 2)) for n, s in seconds.items()])
    print("\nSpeed (wall clock; other agents share the 2 CPU cores):")
    print(speed.to_string(index=False))

    table = pd.DataFrame([row for n in results for row in per_k_table(n, results[n], reidentifier, args.ks)])
    print("\nPrivacy and masking at each K (one run per document, read off the trajectory; ranks re-verified):")
    print(table.round(3).to_string(index=False))
    exact_masked = table[table.search == "exact"].set_index("k").pct_masked
    approx_masked = table[table.search == name].set_index("k").pct_masked
    print("\napproximate − exact, points of words masked at each K:", (approx_masked - exact_masked).round(2).to_dict())


if __name__ == "__main__":
    main()
