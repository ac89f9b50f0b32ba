"""Time the sanitization paper's expensive steps on the 100 annotated Wikipedia biographies and fill their caches.

Runs, on the first N documents (gold spans): the SmolLM2 pass per document (span features, surprisal weights) and the
perturbation indicator's passes (one per entity per document), each timed apart; caches land in the artifacts folder
where the experiment notebooks (36, 37) reuse them. Pass --threads to match the machine (timings depend on load).

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/sanitize_perturbation.py --documents 100 --threads 2
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from deid_nb.causal_lm import load_causal_lm
from deid_nb.sanitize.context_indicators import cached_perturbation_drops
from deid_nb.sanitize.lm_scores import document_scores
from deid_nb.sanitize.risk_indicators import gold_span_table
from deid_nb.sanitize.tab_corpus import load_wiki_annotated
from results import write_results  # this script's folder is on sys.path when it is run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument(
        "--max-chars", type=int, default=1000, help="perturb only each text's first characters (0: all)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.time()
    model, tokenizer = load_causal_lm(args.model)
    load_s = time.time() - start
    docs = load_wiki_annotated()[: args.documents]
    spans = gold_span_table(docs)
    start = time.time()
    document_scores(model, tokenizer, {d.doc_id: d.text for d in docs}, batch_size=args.batch_size)
    lm_pass_s = time.time() - start
    start, entities = time.time(), 0
    for i, d in enumerate(docs):
        drops = cached_perturbation_drops(model, tokenizer, d, spans[spans.doc_id == d.doc_id], args.max_chars or None)
        entities += len(drops)
        if i % 10 == 9:
            print(f"{i + 1} documents, {entities} entities, {time.time() - start:.0f} s", flush=True)
    results = {
        "documents": len(docs),
        "entities": entities,
        "model": args.model,
        "threads": args.threads,
        "max_chars": args.max_chars,
        "load_s": round(load_s, 1),
        "lm_pass_s": round(lm_pass_s, 1),
        "perturbation_s": round(time.time() - start, 1),
        "note": "cached steps take ~0 s on a rerun; delete artifacts/lm_scores and artifacts/perturbation to re-time",
    }
    print(results)
    write_results(results, "sanitize_perturbation")


if __name__ == "__main__":
    main()
