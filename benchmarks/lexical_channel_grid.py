"""Choose the BM25 channel of the hybrid re-identifier (deid_nb.nn_deid.hybrid.HybridReidentifier) on validation documents:
the library's `deid_nb.nn_deid.reidentifier_levers.channel_grid` (notebook 17b_reidentifier_levers) from the command line.

For every setting of the channel — BM25 terms (words only, or also order-free word pairs at most `pair_distance`
apart), k1, b and the query-term saturation k3 (`none`: every repeat of a document term counts, as rank_bm25; 0: each
distinct term once) — the script fits the channel's weight as `fit_lexical_channel` does (mean top-1 on the validation
documents unmasked and with 30% of word types masked) and prints the hybrid's top-1 % over the whole pool on the
validation documents (unmasked / 30% / named-entity masking) and their mean, which is the selection criterion; then,
for information only, the same on the test documents (unmasked / 30% / named entity / lexical / birth date only,
as benchmarks/reid_accuracy.py). The neural part is a registered model (trained once and cached, see reid_accuracy),
or with `--zero-shot-neural` the untrained MiniLM (a check that needs no training).

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/lexical_channel_grid.py --dataset wikibio_2000 --neural nn_uniform
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.data import load_dataset
from deid_nb.nn_deid.reidentifier_levers import channel_grid, load_measured_reidentifier


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument(
        "--max-people", type=int, default=None, help="candidate pool: the dataset's first N people (default: all)"
    )
    parser.add_argument("--neural", default="nn_uniform", help="registry name of the neural part")
    parser.add_argument(
        "--zero-shot-neural", action="store_true", help="the untrained MiniLM as the neural part (no training)"
    )
    parser.add_argument("--pair-distances", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--k1", type=float, nargs="+", default=[1.2, 2.0, 4.5])
    parser.add_argument("--b", type=float, nargs="+", default=[0.75, 0.9])
    parser.add_argument(
        "--k3",
        type=lambda v: None if v.lower() == "none" else float(v),
        nargs="+",
        default=[None, 0.0],
        help="query-term saturation values; 'none' counts every repeat",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--output",
        default=None,
        help="JSON results (default: <artifacts>/benchmarks/lexical_channel_grid_<dataset>.json)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dataset = load_dataset(args.dataset, max_people=args.max_people)
    neural, _ = load_measured_reidentifier("zero_shot" if args.zero_shot_neural else args.neural, dataset)
    results = channel_grid(dataset, neural, args.pair_distances, args.k1, args.b, args.k3)
    best = max(results, key=lambda r: r["validation_mean"])
    print(
        f"best on validation: pairs ≤ {best['pair_distance']} apart, k1 {best['k1']}, b {best['b']}, k3 {best['k3']} (mean {best['validation_mean']})"
    )
    write_results(results, f"lexical_channel_grid_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
