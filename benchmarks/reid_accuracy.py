"""Top-1 re-identification accuracy of the named re-identifiers (paper Table 1, our scale): the library's
`deid_nb.nn_deid.reidentifier_levers.dataset_accuracy` (notebook 17b_reidentifier_levers) from the command line.

For each dataset: test documents, every profile of the dataset as a candidate; documents unmasked, with 30% of
word types masked, after named-entity masking and after lexical masking (every document word that appears in the
profile). Where profiles have a birth_date (WikiBio-2000) it also probes one exact fact alone: documents
'<mask> <mask> born DATE is a <mask>.' (column 'birth date only'). Trains a registry model the first time (cached in
the artifacts directory), then loads it; `--zero-shot-neural` puts the untrained MiniLM in place of every neural model
(hybrids keep their BM25 channel, fitted on the validation documents), a check that needs no training.

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/reid_accuracy.py --datasets wikibio_2000 wikibio_mini \
        --models nn_uniform nn_idf nn_compact bm25 nn_uniform_bm25 --zero-shot
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.data import load_dataset
from deid_nb.nn_deid.registry import REIDENTIFIERS
from deid_nb.nn_deid.reidentifier_levers import dataset_accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["wikibio_2000", "wikibio_mini"])
    parser.add_argument("--models", nargs="+", default=["nn_uniform"], help=f"names from {sorted(REIDENTIFIERS)}")
    parser.add_argument("--zero-shot", action="store_true", help="also the untrained MiniLM bi-encoder")
    parser.add_argument(
        "--zero-shot-neural",
        action="store_true",
        help="the untrained MiniLM in place of every neural model (no training)",
    )
    parser.add_argument("--split", default="test")
    parser.add_argument("--n-documents", type=int, default=None, help="the split's first N documents (default: all)")
    parser.add_argument(
        "--max-people", type=int, default=None, help="candidate pool: the dataset's first N people (default: all)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--output", default=None, help="JSON results (default: <artifacts>/benchmarks/reid_accuracy.json)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    models = (["zero_shot"] if args.zero_shot else []) + list(args.models)
    results = [
        row
        for name in args.datasets
        for row in dataset_accuracy(
            load_dataset(name, max_people=args.max_people), models, args.split, args.n_documents, args.zero_shot_neural
        )
    ]
    write_results(results, "reid_accuracy", args.output)


if __name__ == "__main__":
    main()
