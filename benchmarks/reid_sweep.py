"""Sweep the re-identification model's training levers and measure each variant's top-1 accuracy (issue 3).

Each variant is (BiEncoderConfig overrides, TrainingConfig overrides). For every variant the script trains a model on the
dataset's training people (cached under <artifacts>/reidentifiers/<dataset>/sweep_<variant>-…, so a rerun only
evaluates) and prints top-1 accuracy of the test documents against ALL profiles of the dataset: unmasked, 30% of word
types masked, named-entity masking (deid_nb.baselines.named_entity_redact: CoNLL-like PER/ORG/LOC/MISC, as the paper)
and lexical masking (deid_nb.baselines.lexical_redact), plus the training time. Where profiles have a birth_date
(WikiBio-2000) it also probes one exact fact alone: '<mask> <mask> born DATE is a <mask>.' (column 'birth date only').

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/reid_sweep.py --dataset wikibio_2000 --variants default epochs3

The masked test conditions need spaCy; `--write-conditions FILE` stores them as JSON and `--conditions FILE` reads them
back, so a machine without spaCy (e.g. a GPU box) can run the sweep (`--device cuda`). `--lexical-channel` also scores
each variant with the standardised BM25 channel added (deid_nb.nn_deid.hybrid.HybridReidentifier), its terms and weight fitted
on the validation documents as the registry's hybrids do (deid_nb.nn_deid.hybrid.fit_lexical_channel, which needs spaCy).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.core import atomic_write
from deid_nb.data import PeopleDataset, load_dataset
from deid_nb.metrics import percent_masked
from deid_nb.nn_deid.hybrid import HybridReidentifier, fit_lexical_channel
from deid_nb.nn_deid.model import BiEncoder, BiEncoderConfig, load_model
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.nn_deid.reidentifier_levers import birth_date_probe, masking_conditions
from deid_nb.nn_deid.training import TrainingConfig, top1_accuracy
from deid_nb.nn_deid.training_run import run_directory, train_bi_encoder

VARIANTS: dict[str, tuple[dict, dict]] = {
    "default": ({}, {}),
    "epochs2": ({}, {"epochs": 2}),
    "epochs3": ({}, {"epochs": 3}),
    "epochs5": ({}, {"epochs": 5}),
    "epochs3_ca0": ({}, {"epochs": 3, "profile_epochs": (0,)}),
    "epochs3_ca01": ({}, {"epochs": 3, "profile_epochs": (0, 1)}),
    "epochs5_ca0": ({}, {"epochs": 5, "profile_epochs": (0,)}),
    "epochs3_frozen0": ({}, {"epochs": 3, "frozen_layers": 0}),
    "epochs3_lr2e-4": ({}, {"epochs": 3, "learning_rate": 2e-4}),
    "epochs3_ls0": ({}, {"epochs": 3, "label_smoothing": 0.0}),
    "epochs3_ls0.01": ({}, {"epochs": 3, "label_smoothing": 0.01}),
    "epochs3_dim384": ({"embedding_dim": None}, {"epochs": 3}),
    "epochs3_dim768": ({"embedding_dim": 768}, {"epochs": 3}),
    "epochs3_idf": ({}, {"epochs": 3, "masking_prior": "idf"}),
    "epochs3_bs16": ({}, {"epochs": 3, "batch_size": 16}),
    "epochs3_len96": ({"max_document_tokens": 96}, {"epochs": 3}),
    "epochs3_ca0_frozen0": ({}, {"epochs": 3, "profile_epochs": (0,), "frozen_layers": 0}),
    # the registry's nn_uniform recipe (384-d, two epochs) and nn_unfrozen's (the same with all layers trained)
    "d384_epochs2": ({"embedding_dim": None}, {"epochs": 2}),
    "d384_epochs2_unfrozen": ({"embedding_dim": None}, {"epochs": 2, "frozen_layers": 0}),
}


def with_extra_training_people(dataset: PeopleDataset, other: PeopleDataset) -> PeopleDataset:
    """`dataset` with every person of `other` added as a TRAINING person (and a training-time candidate); people named like
    one of `dataset`'s validation or test people are left out. Validation and test splits are unchanged."""
    held_out = {p.name.strip().lower() for split in ("validation", "test") for p in dataset.split(split)}
    known = {p.person_id for p in dataset.people}
    extra = [p for p in other.people if p.name.strip().lower() not in held_out and p.person_id not in known]
    people = dataset.people + extra
    splits = {**dataset.splits, "train": list(dataset.splits["train"]) + list(range(len(dataset.people), len(people)))}
    return PeopleDataset(f"{dataset.name}+{other.name}", people, splits)


def train_variant(dataset, name, model_overrides, training_overrides, device, threads):
    model_config = BiEncoderConfig(**model_overrides)
    config = TrainingConfig(**{"num_threads": threads, **training_overrides})
    directory = run_directory(dataset, model_config, config, None, f"sweep_{name}")
    state = directory / "training.json"
    if state.exists() and json.loads(state.read_text())["epochs_completed"] + 1 >= config.epochs:
        record = json.loads(state.read_text())
        return load_model(directory / record["checkpoint"], device), record
    torch.manual_seed(config.seed)
    model = BiEncoder(model_config).to(device)
    record = train_bi_encoder(model, dataset, config, directory, progress=False)
    return model, record


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wikibio_2000")
    parser.add_argument("--variants", nargs="+", default=["default", "epochs3"], help=f"from {sorted(VARIANTS)}")
    parser.add_argument(
        "--extra", default=None, help='JSON {"name": [model_overrides, training_overrides]} of more variants'
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--conditions", default=None, help="read the masked test documents from this JSON")
    parser.add_argument(
        "--write-conditions", default=None, help="write the masked test documents to this JSON and stop"
    )
    parser.add_argument("--output", default=None)
    parser.add_argument(
        "--extra-training-people",
        default=None,
        metavar="DATASET",
        help="train every variant also on all people of this dataset (e.g. wikibio_mini); evaluation is unchanged",
    )
    parser.add_argument(
        "--lexical-channel",
        action="store_true",
        help="also score every variant with the standardised BM25 channel added (HybridReidentifier), "
        "its terms and weight fitted on the validation documents (fit_lexical_channel)",
    )
    args = parser.parse_args()
    variants = dict(VARIANTS, **{k: tuple(v) for k, v in json.loads(args.extra or "{}").items()})
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    dataset = load_dataset(args.dataset)
    people = dataset.split("test")
    if args.conditions:
        conditions = json.loads(open(args.conditions).read())
    else:
        conditions = masking_conditions(people)
    if args.write_conditions:
        with atomic_write(args.write_conditions) as f:
            json.dump(conditions, f)
        print(f"written {args.write_conditions}")
        return
    row_of = {p.person_id: i for i, p in enumerate(dataset.people)}
    true_rows = [row_of[p.person_id] for p in people]
    print(
        f"{args.dataset}: {len(people)} test documents vs {len(dataset)} profiles; % words masked: "
        + ", ".join(
            f"{c} {percent_masked(d, conditions['unmasked'], average='corpus'):.1f}" for c, d in conditions.items()
        ),
        flush=True,
    )
    probe_texts, probe_ids, unique = birth_date_probe(people, dataset.people)
    if probe_texts:
        conditions = {**conditions, "birth date only": probe_texts}
        print(
            f"birth date only: {len(probe_texts)} documents '<mask> <mask> born DATE is a <mask>.', "
            f"{100 * unique:.1f}% of those dates belong to one candidate only",
            flush=True,
        )
    training_set = dataset
    if args.extra_training_people:
        training_set = with_extra_training_people(dataset, load_dataset(args.extra_training_people))
        print(
            f"training on {len(training_set.splits['train'])} people ({len(training_set) - len(dataset)} from "
            f"{args.extra_training_people}); evaluation still against the {len(dataset)} profiles of {args.dataset}",
            flush=True,
        )
    results = []
    for name in args.variants:
        model_overrides, training_overrides = variants[name]
        started = time.perf_counter()
        model, record = train_variant(
            training_set,
            name,
            model_overrides,
            training_overrides,
            args.device,
            args.threads if args.device == "cpu" else None,
        )
        index = NeuralReidentifier(model, dataset.people, name, batch_size=128)  # G, and the neural part of the hybrid
        G = index.profile_embeddings
        row = {
            "variant": name,
            "model": model_overrides,
            "training": training_overrides,
            "extra_training_people": args.extra_training_people,
            "train_seconds": round(sum(e["seconds"] for e in record["history"]), 1),
            "validation": [(e["validation_top1"], e["validation_top1_masked"]) for e in record["history"]],
        }
        for condition, texts in conditions.items():
            rows = [row_of[i] for i in probe_ids] if condition == "birth date only" else true_rows
            row[condition] = round(100 * top1_accuracy(model, texts, rows, G), 1)
        results.append(row)
        print(
            f"{name:22s} "
            + " / ".join(f"{c} {row[c]:5.1f}" for c in conditions)
            + f"   train {row['train_seconds']} s (wall {time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        if args.lexical_channel:
            hybrid = HybridReidentifier(index, dataset.people)
            fit_lexical_channel(hybrid, dataset.split("validation"))  # terms and weight, as the registry's hybrids
            hybrid_row = {
                **row,
                "variant": f"{name}+bm25",
                "lexical_weight": hybrid.lexical_weight,
                "pair_distance": hybrid.pair_distance,
            }
            for condition, texts in conditions.items():
                ids = probe_ids if condition == "birth date only" else [p.person_id for p in people]
                hybrid_row[condition] = round(100 * float(np.mean(hybrid.ranks(texts, ids) == 0)), 1)
            results.append(hybrid_row)
            print(
                f"{name + '+bm25':22s} "
                + " / ".join(f"{c} {hybrid_row[c]:5.1f}" for c in conditions)
                + f"   pair distance {hybrid.pair_distance}, lexical weight {hybrid.lexical_weight} (fitted on validation)",
                flush=True,
            )
    write_results(results, f"reid_sweep_{args.dataset}", args.output)


if __name__ == "__main__":
    main()
