"""Two notebooks at a time or one: the throughput of the experiments' main work (MiniLM encoding) on this machine's cores,
one process with every core against as many processes with one core each, in one run.

`make reproduce` runs `JOBS` notebooks at once, each kernel with its share of the cores (deid_nb.reproduce._core_shares).
This script encodes the same batches of biography-length text with the packaged all-MiniLM-L6-v2 (the encoder of every
neural re-identifier) first in one process with all cores, then split over one single-threaded process per core, started
together, and prints documents per second for each and their ratio (shared / one).

    .venv/bin/python benchmarks/kernel_shares.py --batches 8
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.encoders import load_encoder

SENTENCE = "john smith was born in 1950 in london . he was an english footballer who played for arsenal and chelsea . "
BATCH = [SENTENCE * 6] * 64  # 64 documents cut at 128 tokens, as the bi-encoder cuts them


def encode_seconds(threads: int, batches: int, start=None) -> float:
    "Seconds to encode `batches` batches with `threads` torch threads (after one untimed batch; `start`: wait for it)."
    torch.set_num_threads(threads)
    tokenizer, encoder = load_encoder("minilm")
    encoder.eval()
    with torch.no_grad():
        inputs = tokenizer(BATCH, padding=True, truncation=True, max_length=128, return_tensors="pt")
        encoder(**inputs)
        if start is not None:
            start.wait()
        started = time.perf_counter()
        for _ in range(batches):
            encoder(**inputs)
    return time.perf_counter() - started


def _shared_worker(args) -> float:
    batches, start = args
    return encode_seconds(1, batches, start)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=8, help="batches of 64 documents in all (split over processes)")
    parser.add_argument("--output", help="JSON results path (default: <artifacts>/benchmarks/kernel_shares.json)")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    one_seconds = encode_seconds(cores, args.batches)
    manager = multiprocessing.get_context("spawn").Manager()
    start = manager.Barrier(cores)
    with multiprocessing.get_context("spawn").Pool(cores) as pool:
        shared_seconds = max(pool.map(_shared_worker, [(args.batches // cores, start)] * cores))
    documents = len(BATCH) * (args.batches // cores) * cores
    results = {
        "cores": cores,
        "documents": documents,
        "one_process_docs_per_s": round(len(BATCH) * args.batches / one_seconds, 1),
        "one_thread_each_docs_per_s": round(documents / shared_seconds, 1),
    }
    results["ratio_shared_over_one"] = round(
        results["one_thread_each_docs_per_s"] / results["one_process_docs_per_s"], 2
    )
    print(
        f"{cores} cores: one process with {cores} threads {results['one_process_docs_per_s']} docs/s; "
        f"{cores} processes of one thread {results['one_thread_each_docs_per_s']} docs/s; "
        f"ratio {results['ratio_shared_over_one']}"
    )
    write_results(results, "kernel_shares", args.output)


if __name__ == "__main__":
    main()
