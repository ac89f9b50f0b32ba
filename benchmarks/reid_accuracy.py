"""Top-1 re-identification accuracy of the named re-identifiers (paper Table 1, our scale).

For each dataset: test documents, every profile of the dataset as a candidate; documents unmasked, with 30% of
word types masked, after named-entity masking and after lexical masking (every document word that appears in the
profile). Where profiles have a birth_date (WikiBio-2000) it also probes one exact fact alone: documents
'<mask> <mask> born DATE is a <mask>.' (column 'birth date only'). Trains a model the first time (cached in the
artifacts directory), then loads it.

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/reid_accuracy.py --datasets wikibio_2000 wikibio_mini \
        --models nn_uniform nn_idf nn_compact bm25 nn_uniform_bm25 --zero-shot
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

from deid_nb import metrics
from deid_nb.core import get_artifacts_dir
from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.data import load_dataset
from deid_nb.index import REIDENTIFIERS, HybridSpec, NeuralReidentifier, load_reidentifier
from deid_nb.masking import mask_fraction_of_types
from deid_nb.model import BiEncoder, BiEncoderConfig
from deid_nb.training import run_directory

def conditions(people) -> dict[str, list[str]]:
    "The test documents unmasked, with 30% of word types masked, and after the library's named-entity and lexical baselines."
    from deid_nb.baselines import lexical_redact, named_entity_redact  # CoNLL-like entity types and profile values, as the paper
    documents = [p.document for p in people]
    return {"unmasked": documents,
            "30% types": [mask_fraction_of_types(d, 0.3, seed=0) for d in documents],
            "named entity": named_entity_redact(documents),
            "lexical": [lexical_redact(p.document, p.profile) for p in people]}


def birth_date_probe(people, candidates) -> tuple[list[str], list[str], float]:
    """One exact fact alone: '<mask> <mask> born BIRTH_DATE is a <mask>.' for each person whose profile has a birth_date
    (WikiBio-2000's infoboxes), their ids, and the share of those dates that no other candidate shares."""
    from collections import Counter
    dated = [p for p in people if p.profile.get("birth_date", "").strip()]
    counts = Counter(p.profile.get("birth_date", "").strip() for p in candidates)
    unique = float(np.mean([counts[p.profile["birth_date"].strip()] == 1 for p in dated])) if dated else float("nan")
    return [f"<mask> <mask> born {p.profile['birth_date']} is a <mask>." for p in dated], [p.person_id for p in dated], unique


def percent_masked(original: list[str], masked: list[str]) -> float:
    "% of all words of the originals that are masks (corpus average)."
    return metrics.percent_masked(masked, original, average="corpus")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["wikibio_2000", "wikibio_mini"])
    parser.add_argument("--models", nargs="+", default=["nn_uniform"], help=f"names from {sorted(REIDENTIFIERS)}")
    parser.add_argument("--zero-shot", action="store_true", help="also the untrained MiniLM bi-encoder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=None, help="JSON results (default: <artifacts>/benchmarks/reid_accuracy.json)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = []
    for dataset_name in args.datasets:
        dataset = load_dataset(dataset_name)
        people = dataset.split(args.split)
        true_ids = [p.person_id for p in people]
        documents = conditions(people)
        masked_share = {c: percent_masked(documents["unmasked"], d) for c, d in documents.items()}
        print(f"\n{dataset_name}: {len(people)} {args.split} documents, {len(dataset)} candidates; % words masked: "
              + ", ".join(f"{c} {v:.1f}" for c, v in masked_share.items()), flush=True)
        probe_texts, probe_ids, unique = birth_date_probe(people, dataset.people)
        if probe_texts:
            print(f"birth date only: {len(probe_texts)} documents '<mask> <mask> born DATE is a <mask>.', "
                  f"{100 * unique:.1f}% of those dates belong to one candidate only", flush=True)
        models = (["zero_shot"] if args.zero_shot else []) + list(args.models)
        for name in models:
            started = time.perf_counter()
            if name == "zero_shot":
                reidentifier, train_seconds = (NeuralReidentifier(BiEncoder(BiEncoderConfig()).eval(), dataset.people, "zero_shot",
                                                                       cache_dir=get_artifacts_dir() / "profile_cache"), 0.0)
            else:
                reidentifier = load_reidentifier(name, dataset)
                spec, trained_name = REIDENTIFIERS[name], name
                if isinstance(spec, HybridSpec):  # the neural part's training; the BM25 channel needs none
                    spec, trained_name = REIDENTIFIERS[spec.neural], spec.neural
                train_seconds = None
                if spec is not None:
                    record = json.loads((run_directory(dataset, spec.model, spec.training, None, trained_name) / "training.json").read_text())
                    train_seconds = round(sum(e["seconds"] for e in record["history"]), 1)
            load_seconds = time.perf_counter() - started
            row = {"dataset": dataset_name, "model": name, "train_seconds": train_seconds, "load_seconds": round(load_seconds, 1)}
            if hasattr(reidentifier, "lexical_weight"):  # a hybrid: the BM25 channel's terms and weight, fitted on validation documents
                row["lexical_weight"], row["pair_distance"] = reidentifier.lexical_weight, reidentifier.pair_distance
            for condition, texts in documents.items():
                scored = time.perf_counter()
                row[condition] = round(100 * float(np.mean(reidentifier.ranks(texts, true_ids) == 0)), 1)
                row[f"{condition} docs/s"] = round(len(texts) / (time.perf_counter() - scored), 1)
            if probe_texts:  # can the re-identifier match an exact date, the kind of fact that survives named-entity masking?
                row["birth date only"] = round(100 * float(np.mean(reidentifier.ranks(probe_texts, probe_ids) == 0)), 1)
            row["percent_masked"] = {c: round(v, 1) for c, v in masked_share.items()}
            results.append(row)
            print(f"  {name:12s} top-1 %: " + " / ".join(f"{c} {row[c]}" for c in documents)
                  + (f" / birth date only {row['birth date only']}" if probe_texts else "")
                  + (f" / pair distance {row['pair_distance']}, lexical weight {row['lexical_weight']}" if "lexical_weight" in row else "")
                  + f"   (train {train_seconds} s, load {load_seconds:.0f} s, {row['unmasked docs/s']} docs/s)", flush=True)
    print()
    write_results(results, "reid_accuracy", args.output)


if __name__ == "__main__":
    main()
