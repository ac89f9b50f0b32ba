"""The causal-LM infiller with its prompt encoded once (`LMInfiller.prefill`) against encoding it per beam and again for the scores.

Hugging Face's beam search copies the prompt once per beam before its first forward pass; the infiller then encoded the prompt a
further time to score its hypotheses. Since `prefill`, the prompt is encoded once and both the beams and the scores continue
from its cache. This script runs the annotated-track attack (`47_table5_annotated`'s setting: k = 1, the LM on the first
documents) both ways on the same documents and retrieved passages, and prints seconds, spans per minute, the speed-up and
whether every prediction is the same.

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/lm_infiller_speed.py --documents 3 --levels L1 L3 L4 --beams 2
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.causal_lm import load_causal_lm
from deid_nb.core import cpu_threads
from deid_nb.infill.alignment import target_documents
from deid_nb.infill.attack import infill_documents
from deid_nb.infill.infillers import CopyInfiller, LMInfiller, SpanContext
from deid_nb.infill.knowledge_base import build_knowledge_base, default_sources
from deid_nb.infill.retrieval import DenseReranker, Retriever


class PromptPerBeam(LMInfiller):
    "The infiller as it was before `prefill`: `generate` encodes the prompt once per beam, the scoring once more."

    def predict(self, context: SpanContext, passages) -> str:
        prompt = self.prompt_ids(context, passages)
        found = self.hypotheses(context, passages, prompt)  # no prefix: generate encodes the prompt itself
        if not found:
            return ""
        space = context.left[len(context.left.rstrip()) :]
        own, right = self.continuation_logprobs(
            prompt, [space + h for h in found], context.right
        )  # encodes the prompt again
        scores = self.hypothesis_weight * own + right + self.copy_weight * np.array(list(found.values()))
        return list(found)[int(np.argmax(scores))]


def timed(run):
    started = time.perf_counter()
    out = run()
    return out, time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="wiki_annotated")
    parser.add_argument("--documents", type=int, default=3, help="the first documents of the dataset's targets")
    parser.add_argument("--levels", nargs="+", default=["L1", "L3", "L4"], help="background levels (47: L1 L3 L4)")
    parser.add_argument("--beams", type=int, default=2, help="LM beams per span (47: 2; the infiller's default: 4)")
    parser.add_argument("--lm", default="smollm2", help="a packaged causal LM, a local folder or a Hugging Face name")
    parser.add_argument(
        "--output", default=None, help="JSON path (default: <artifacts>/benchmarks/lm_infiller_speed.json)"
    )
    args = parser.parse_args()
    torch.set_num_threads(cpu_threads())
    retriever = Retriever(build_knowledge_base(default_sources()), DenseReranker("minilm"), n_documents=10)
    documents = target_documents(args.dataset, args.documents)
    model, tokenizer = load_causal_lm(args.lm)
    _, warm = timed(
        lambda: [infill_documents(documents, retriever, level, CopyInfiller()) for level in args.levels]
    )  # retrieval caches warm
    print(
        f"{len(documents)} documents, levels {args.levels}, {args.beams} beams, {args.lm}, {torch.get_num_threads()} threads; "
        f"retrieval + copy infiller (warm-up) {warm:.1f} s"
    )
    runs = {}
    for name, infiller in [
        ("prompt per beam (before)", PromptPerBeam(model, tokenizer, beams=args.beams)),
        ("shared prefill", LMInfiller(model, tokenizer, beams=args.beams)),
    ]:
        frames, seconds = timed(
            lambda: [infill_documents(documents, retriever, level, infiller) for level in args.levels]
        )
        runs[name] = (frames, seconds)
    (before, t_before), (after, t_after) = runs.values()
    spans = sum(len(f) for f in after)
    same = sum(int((a.prediction.fillna("") == b.prediction.fillna("")).sum()) for a, b in zip(before, after))
    results = {
        "documents": len(documents),
        "levels": args.levels,
        "beams": args.beams,
        "lm": args.lm,
        "threads": torch.get_num_threads(),
        "spans": spans,
        "seconds_before": round(t_before, 1),
        "seconds_after": round(t_after, 1),
        "speedup": round(t_before / t_after, 2),
        "same_predictions": same,
        "spans_per_minute_before": round(60 * spans / t_before, 1),
        "spans_per_minute_after": round(60 * spans / t_after, 1),
    }
    for name, (frames, seconds) in runs.items():
        print(f"  {name:26} {seconds:7.1f} s  {60 * spans / seconds:6.1f} spans/min")
    print(f"  speed-up {results['speedup']}x; the same prediction on {same} of {spans} spans")
    write_results(results, "lm_infiller_speed", args.output)


if __name__ == "__main__":
    main()
