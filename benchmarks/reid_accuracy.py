"""Top-1 re-identification accuracy of the named re-identifiers (paper Table 1, our scale).

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
import json
import os
import time
from collections import Counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.baselines import lexical_redact, named_entity_redact
from deid_nb.core import get_artifacts_dir
from deid_nb.data import PeopleDataset, load_dataset
from deid_nb.masking import mask_fraction_of_types
from deid_nb.metrics import FirstPlaces, percent_masked
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.nn_deid.registry import (
    REIDENTIFIERS,
    ZERO_SHOT,
    HybridSpec,
    hybrid_from_spec,
    load_reidentifier,
    zero_shot_model,
)
from deid_nb.nn_deid.training_run import run_directory
from deid_nb.reidentifier import Reidentifier


def conditions(people) -> dict[str, list[str]]:
    "The test documents unmasked, with 30% of word types masked, and after the library's named-entity and lexical baselines."
    documents = [p.document for p in people]
    return {
        "unmasked": documents,
        "30% types": [mask_fraction_of_types(d, 0.3, seed=0) for d in documents],
        "named entity": named_entity_redact(documents),
        "lexical": [lexical_redact(p.document, p.profile) for p in people],
    }


def birth_date_probe(people, candidates) -> tuple[list[str], list[str], float]:
    """One exact fact alone: '<mask> <mask> born BIRTH_DATE is a <mask>.' for each person whose profile has a birth_date
    (WikiBio-2000's infoboxes), their ids, and the share of those dates that no other candidate shares."""
    dated = [p for p in people if p.profile.get("birth_date", "").strip()]
    counts = Counter(p.profile.get("birth_date", "").strip() for p in candidates)
    unique = float(np.mean([counts[p.profile["birth_date"].strip()] == 1 for p in dated])) if dated else float("nan")
    return (
        [f"<mask> <mask> born {p.profile['birth_date']} is a <mask>." for p in dated],
        [p.person_id for p in dated],
        unique,
    )


def zero_shot(dataset: PeopleDataset, name: str = ZERO_SHOT) -> NeuralReidentifier:
    "The registry's zero-shot MiniLM over all of `dataset`'s people under `name`, its profile embeddings cached."
    return NeuralReidentifier(zero_shot_model(), dataset.people, name, cache_dir=get_artifacts_dir() / "profile_cache")


def load_model(name: str, dataset: PeopleDataset, zero_shot_neural: bool = False) -> tuple[Reidentifier, float | None]:
    "Re-identifier `name` ('zero_shot', or a registry name; neural parts zero-shot if asked) and its training seconds (None: none)."
    if name == "zero_shot":
        return zero_shot(dataset), 0.0
    spec = REIDENTIFIERS[name]
    if zero_shot_neural and spec is not None:
        if isinstance(spec, HybridSpec):
            return hybrid_from_spec(spec, zero_shot(dataset, spec.neural), dataset, name), 0.0
        return zero_shot(dataset, name), 0.0
    reidentifier = load_reidentifier(name, dataset, progress=False)
    if isinstance(spec, HybridSpec):  # the neural part's training; the BM25 channel needs none
        name, spec = spec.neural, REIDENTIFIERS[spec.neural]
    if spec is None:
        return reidentifier, None
    record = run_directory(dataset, spec.model, spec.training, None, name) / "training.json"
    return reidentifier, round(sum(e["seconds"] for e in json.loads(record.read_text())["history"]), 1)


def accuracy_row(reidentifier: Reidentifier, documents: dict[str, list[str]], true_ids, probe=None) -> dict:
    "Top-1 % and documents/s of `reidentifier` on each condition, the probe's top-1 %, and a hybrid's fitted channel."
    row, first_places = (
        {},
        FirstPlaces(reidentifier),
    )  # top-1 exactly as the model decides it, in bfloat16 where the CPU has it
    if hasattr(
        reidentifier, "lexical_weight"
    ):  # a hybrid: the BM25 channel's terms and weight, fitted on validation documents
        row["lexical_weight"], row["pair_distance"] = reidentifier.lexical_weight, reidentifier.pair_distance
    for condition, texts in documents.items():
        scored = time.perf_counter()
        row[condition] = round(100 * float(np.mean(first_places.ranks(texts, true_ids) == 0)), 1)
        row[f"{condition} docs/s"] = round(len(texts) / (time.perf_counter() - scored), 1)
    if (
        probe and probe[0]
    ):  # can the re-identifier match an exact date, the kind of fact that survives named-entity masking?
        row["birth date only"] = round(100 * float(np.mean(first_places.ranks(probe[0], probe[1]) == 0)), 1)
    return row


def dataset_accuracy(
    dataset: PeopleDataset, models, split: str = "test", n_documents: int | None = None, zero_shot_neural: bool = False
) -> list[dict]:
    "One row per model: top-1 % on `split`'s first `n_documents` documents (all: None) under every condition, against all profiles."
    people = dataset.split(split)[:n_documents]
    true_ids, documents = [p.person_id for p in people], conditions(people)
    masked_share = {
        c: round(percent_masked(d, documents["unmasked"], average="corpus"), 1) for c, d in documents.items()
    }
    probe_texts, probe_ids, unique = birth_date_probe(people, dataset.people)
    print(
        f"\n{dataset.name}: {len(people)} {split} documents, {len(dataset)} candidates; % words masked: {masked_share}"
        + (
            f"; birth date only: {len(probe_texts)} documents, {100 * unique:.1f}% of those dates unique"
            if probe_texts
            else ""
        ),
        flush=True,
    )
    results = []
    for name in models:
        started = time.perf_counter()
        reidentifier, train_seconds = load_model(name, dataset, zero_shot_neural)
        load_seconds = round(time.perf_counter() - started, 1)
        row = {
            "dataset": dataset.name,
            "model": name,
            "documents": len(people),
            "probe_documents": len(probe_texts),
            "zero_shot_neural": zero_shot_neural,
            "train_seconds": train_seconds,
            "load_seconds": load_seconds,
            **accuracy_row(reidentifier, documents, true_ids, (probe_texts, probe_ids)),
            "percent_masked": masked_share,
        }
        results.append(row)
        print(
            f"  {name:16s} top-1 %: "
            + " / ".join(f"{c} {row[c]}" for c in [*documents, "birth date only"] if c in row)
            + (
                f" / pair distance {row['pair_distance']}, lexical weight {row['lexical_weight']}"
                if "lexical_weight" in row
                else ""
            )
            + f"   (train {train_seconds} s, load {load_seconds} s, {row['unmasked docs/s']} docs/s)",
            flush=True,
        )
    return results


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
