"""Choose the BM25 channel of the hybrid re-identifier (deid_nb.nn_deid.hybrid.HybridReidentifier) on validation documents.

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
import itertools
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

import reid_accuracy  # the same test conditions (this script's folder is on sys.path when it is run)
from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.data import PeopleDataset, load_dataset
from deid_nb.nn_deid.hybrid import HybridReidentifier, channel_conditions, fitted_lexical_weight, lexical_weight_table
from deid_nb.nn_deid.neural import NeuralReidentifier


def top1(neural_scores: np.ndarray, lexical_scores: np.ndarray, weight: float, columns: np.ndarray) -> float:
    "Top-1 % of the hybrid's scores at `weight`."
    return round(100 * lexical_weight_table(neural_scores, lexical_scores, columns, (weight,))[weight], 1)


def channel_grid(
    dataset: PeopleDataset,
    neural: NeuralReidentifier,
    pair_distances=(0, 1, 2, 3),
    k1s=(1.2, 2.0, 4.5),
    bs=(0.75, 0.9),
    k3s=(None, 0.0),
) -> list[dict]:
    "One row per channel setting: the fitted weight, validation top-1 % per condition and their mean, and test top-1 %."
    validation, test = dataset.split("validation"), dataset.split("test")
    validation_conditions = channel_conditions(validation)  # what fit_lexical_channel chooses on
    test_conditions = reid_accuracy.conditions(test)
    probe_texts, probe_ids, _ = reid_accuracy.birth_date_probe(test, dataset.people)
    if probe_texts:
        test_conditions["birth date only"] = probe_texts
    validation_columns = neural.columns([p.person_id for p in validation])
    test_columns = {
        c: neural.columns(probe_ids if c == "birth date only" else [p.person_id for p in test]) for c in test_conditions
    }
    neural_validation = {
        c: neural.score(t) for c, t in validation_conditions.items()
    }  # the neural part once; only the channel varies
    neural_test = {c: neural.score(t) for c, t in test_conditions.items()}
    print(
        f"{dataset.name}: {len(validation)} validation and {len(test)} test documents, {len(dataset)} candidates, "
        f"neural part {neural.name}",
        flush=True,
    )
    results = []
    for pair_distance, k1, b, k3 in itertools.product(pair_distances, k1s, bs, k3s):
        hybrid = HybridReidentifier(neural, dataset.people, k1=k1, b=b, pair_distance=pair_distance, k3=k3)
        lexical = {c: hybrid.lexical_scores(t) for c, t in validation_conditions.items()}
        weight = fitted_lexical_weight(neural_validation, lexical, validation_columns)  # as fit_lexical_channel
        row = {
            "pair_distance": pair_distance,
            "k1": k1,
            "b": b,
            "k3": k3,
            "lexical_weight": weight,
            "validation": {
                c: top1(neural_validation[c], lexical[c], weight, validation_columns) for c in validation_conditions
            },
        }
        row["validation_mean"] = round(float(np.mean(list(row["validation"].values()))), 2)
        row["test"] = {
            c: top1(neural_test[c], hybrid.lexical_scores(t), weight, test_columns[c])
            for c, t in test_conditions.items()
        }
        results.append(row)
        print(
            f"pairs ≤ {pair_distance} apart, k1 {k1}, b {b}, k3 {k3}: weight {weight}; validation "
            + " / ".join(str(v) for v in row["validation"].values())
            + f" (mean {row['validation_mean']}); test "
            + " / ".join(str(v) for v in row["test"].values()),
            flush=True,
        )
    return results


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
    neural, _ = reid_accuracy.load_model("zero_shot" if args.zero_shot_neural else args.neural, dataset)
    results = channel_grid(dataset, neural, args.pair_distances, args.k1, args.b, args.k3)
    best = max(results, key=lambda r: r["validation_mean"])
    print(
        f"best on validation: pairs ≤ {best['pair_distance']} apart, k1 {best['k1']}, b {best['b']}, k3 {best['k3']} (mean {best['validation_mean']})"
    )
    write_results(results, f"lexical_channel_grid_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
