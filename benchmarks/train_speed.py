"""Training speed (sequences/s) and validation top-1 of naive full fine-tuning vs the CPU recipe.

Every variant trains the MiniLM bi-encoder's document encoder for one epoch on the same first N training documents
of a dataset (`first_training_people`: the dataset with its train split cut to N; full softmax over every profile,
uniform masking prior, label smoothing 0.1, no coordinate ascent),
then report top-1 over the whole candidate pool on the validation documents, unmasked and 30%-masked.

naive:  all layers trained, every batch padded to 128 tokens, shuffled batches
recipe: embeddings + bottom 3 layers frozen, length-bucketed batches with dynamic padding
recipe_all_layers: the recipe with all six layers trained (embeddings frozen), as the registry's nn_unfrozen

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/train_speed.py --dataset wikibio_2000 --train-documents 320
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.core import get_artifacts_dir
from deid_nb.data import PeopleDataset, load_dataset
from deid_nb.nn_deid.model import BiEncoder, BiEncoderConfig
from deid_nb.nn_deid.training import TrainingConfig
from deid_nb.nn_deid.training_run import train_bi_encoder

VARIANTS = {
    "naive": dict(frozen_layers=0, freeze_embeddings=False, length_bucketing=False, dynamic_padding=False),
    "recipe": dict(frozen_layers=3, freeze_embeddings=True, length_bucketing=True, dynamic_padding=True),
    "recipe_all_layers": dict(
        frozen_layers=0, freeze_embeddings=True, length_bucketing=True, dynamic_padding=True
    ),  # nn_unfrozen's
}


def first_training_people(dataset: PeopleDataset, n: int) -> PeopleDataset:
    "`dataset` with only its first `n` training people in the train split; candidates, validation and test unchanged."
    return PeopleDataset(
        f"{dataset.name}-train{n}", dataset.people, {**dataset.splits, "train": list(dataset.splits["train"])[:n]}
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument("--train-documents", type=int, default=320, help="first N training documents (one epoch)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    dataset = first_training_people(load_dataset(args.dataset), args.train_documents)
    results = []
    for variant in args.variants:
        config = TrainingConfig(epochs=1, profile_epochs=(), num_threads=args.threads, **VARIANTS[variant])
        torch.manual_seed(config.seed)
        model = BiEncoder(BiEncoderConfig())
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            entry = train_bi_encoder(
                model, dataset, config, tmp, progress=False, profile_cache_dir=get_artifacts_dir() / "profile_cache"
            )["history"][0]
        row = {
            "variant": variant,
            "dataset": args.dataset,
            "train_documents": args.train_documents,
            "sequences_per_second": entry["document_sequences_per_second"],
            "validation_top1": round(100 * entry["validation_top1"], 1),
            "validation_top1_masked30": round(100 * entry["validation_top1_masked"], 1),
            "epoch_seconds": round(time.perf_counter() - started, 1),
            **VARIANTS[variant],
        }
        results.append(row)
        print(json.dumps(row), flush=True)
    write_results(results, f"train_speed_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
