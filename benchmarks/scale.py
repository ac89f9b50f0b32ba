"""Cost as the candidate pool grows (issue 36, item 5): index build time, peak memory, ranking throughput, certificate
verification time and exact-vs-FAISS agreement for pools of 2k, 20k, 200k and 1M profiles; de-identification throughput
where it is in reach (by default at 2k and 20k).

The pools are SYNTHETIC apart from 200 real people. Rows 0-199 are the zero-shot MiniLM embeddings of the real profiles of
WikiBio-2000's 200 test people (whose documents are ranked). The next `--encoded` rows are MiniLM embeddings of synthetic
profiles: each field of the 1,800 train/validation profiles is kept with its observed frequency and given a value drawn
uniformly from the values observed for that field (fields independent; no test person's values used). Every further row is
not encoded: it is resampled from the encoded synthetic rows, v = normalise((1 - λ) a + λ b + σ ε) with a, b two random
encoded rows, λ ~ U(0, 0.5), ε ~ N(0, I / 384) and σ = `--sigma`. Pools are prefixes of one 1M-row safetensors file, which
each size memory-maps; each size is measured in its own process (peak RSS = that process's ru_maxrss).

    DEID_NB_DATA=/work/shared/data nice .venv/bin/python benchmarks/scale.py

writes figures/scale/scale.csv and figures/scale/scale.png (and the raw JSON under <artifacts>/benchmarks/).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import matplotlib
import numpy as np
import pandas as pd

from results import write_results  # this script's folder is on sys.path when it is run
from deid_nb.core import get_artifacts_dir
from deid_nb.data import load_dataset
from deid_nb.masking import UNIT_PATTERN, mask_words
from deid_nb.nn_deid.certificate import certify, model_fingerprint, verify_certificate
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.index import (ExactIndex, FaissIndex, faiss, open_profile_embeddings, save_profile_embeddings,
                                   shortlist_ranks, shortlist_scores)
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.nn_deid.registry import zero_shot_model
from deid_nb.people import Person

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def peak_rss_gb() -> float:
    "This process's peak resident memory so far, GB (VmHWM: unlike ru_maxrss, not inherited from the parent across exec)."
    status = Path("/proc/self/status").read_text()
    return int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1]) / 2**20


def synthetic_profiles(people, n: int, seed: int) -> list[dict]:
    "`n` profiles: each field kept with its frequency among `people`, its value drawn from that field's observed values."
    rng, values, order = np.random.default_rng(seed), {}, {}
    for person in people:
        for position, (field, value) in enumerate(person.profile.items()):
            values.setdefault(field, []).append(value)
            order.setdefault(field, position)
    fields = sorted(values, key=lambda f: (order[f], f))
    coverage = np.array([len(values[f]) / len(people) for f in fields])
    profiles = []
    for _ in range(n):
        kept = [f for f, keep in zip(fields, rng.random(len(fields)) < coverage) if keep or f == "name"]
        profiles.append({f: values[f][rng.integers(len(values[f]))] for f in kept})
    return profiles


def resampled(encoded: np.ndarray, n: int, sigma: float, rng) -> np.ndarray:
    "`n` rows v = normalise((1 - λ) a + λ b + σ ε) from random encoded rows a, b (see the module docstring)."
    a, b = encoded[rng.integers(len(encoded), size=n)], encoded[rng.integers(len(encoded), size=n)]
    lam = rng.uniform(0, 0.5, size=(n, 1)).astype(np.float32)
    rows = (1 - lam) * a + lam * b + sigma * rng.standard_normal(a.shape).astype(np.float32) / np.sqrt(a.shape[1])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def build_pool_file(path: Path, test_people, other_people, size: int, encoded: int, sigma: float, seed: int) -> dict:
    "Write the largest pool (real test profiles, encoded synthetic ones, resampled ones) as safetensors; what it took."
    model, started = zero_shot_model(), time.perf_counter()
    real = model.encode_profiles([p.profile for p in test_people], batch_size=64)
    synthetic = model.encode_profiles(synthetic_profiles(other_people, encoded, seed), batch_size=64)
    encode_s, rng = time.perf_counter() - started, np.random.default_rng(seed + 1)
    rest = size - len(real) - len(synthetic)
    chunks = [real, synthetic] + [resampled(synthetic, min(100_000, rest - s), sigma, rng) for s in range(0, rest, 100_000)]
    save_profile_embeddings(path, chunks, n=size)
    return {"encoded_real": len(real), "encoded_synthetic": len(synthetic), "resampled": rest, "encode_s": encode_s}


def timed(function, *args, **kwargs):
    "(result, seconds)."
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def agreement(exact: ExactIndex, approximate, queries: np.ndarray, k: int) -> dict:
    "Share of queries with the same top-1 candidate, and mean overlap of the top-k sets, exact vs `approximate`."
    exact_top, found_top = exact.search(queries, k)[0], approximate.search(queries, k)[0]
    overlap = [len(set(e) & set(f)) / k for e, f in zip(exact_top, found_top)]
    return {"top1_agreement": float(np.mean(exact_top[:, 0] == found_top[:, 0])), "topk_overlap": float(np.mean(overlap))}


def profile_masked(person) -> str:
    "The document with every word of its true profile's values masked: a crude de-identification that gives certifiable texts."
    return mask_words(person.document, {w for value in person.profile.values() for w in UNIT_PATTERN.findall(value)})


def certificates_at_size(reidentifier, index, people, k: int, top_m: int) -> dict:
    "Certificates of profile-masked texts from shortlist scores (k = min(K, shortlist rank); rank 0 skipped), verified with K + 1 scores."
    fingerprint, fingerprint_s = timed(model_fingerprint, reidentifier)
    texts = [profile_masked(p) for p in people]
    queries = (reidentifier.scale * reidentifier.embed_documents(texts)).numpy()
    seconds, verified, certified = [], 0, 0
    for i, text in enumerate(texts):
        scores = shortlist_scores(index, queries[i], i, top_m)
        rank = int((scores[np.arange(len(scores)) != i] >= scores[i]).sum())
        if rank < 1:
            continue
        certificate = certify(text, reidentifier.candidate_ids[i], reidentifier, min(k, rank), scores=scores, fingerprint=fingerprint)
        check, took = timed(verify_certificate, text, certificate, reidentifier, fingerprint=fingerprint)
        certified, verified, seconds = certified + 1, verified + check.ok, seconds + [took]
    return {"fingerprint_s": fingerprint_s, "certificates": certified, "certificates_verified": verified,
            "verify_s_per_certificate": float(np.mean(seconds)) if seconds else float("nan")}


def deidentify_at_size(reidentifier, people, k: int) -> dict:
    "Docs/min of `deidentify` (approximate search, truncated to the window) and how many of its certificates verify."
    results, seconds = timed(deidentify, people, reidentifier, k, long_documents="truncate")
    fingerprint = model_fingerprint(reidentifier)
    verified = sum(verify_certificate(r.text, r.certificate, reidentifier, fingerprint=fingerprint).ok for r in results if r.certificate.goal_met)
    return {"deid_docs": len(people), "deid_docs_per_min": 60 * len(people) / seconds, "deid_certified": sum(r.certificate.goal_met for r in results),
            "deid_verified": verified}


def measure(size: int, args) -> dict:
    "Everything measured at one pool size (run in its own process, so peak RSS is this size's)."
    data = load_dataset("wikibio_2000", data_dir=args.data_dir)
    test, model = data.split("test"), zero_shot_model()
    G = open_profile_embeddings(args.pool_file)[:size]
    documents = [p.document for p in test]
    row = {"pool": size, "synthetic": size - len(test), "rss_start_gb": peak_rss_gb()}
    embeddings, row["encode_s"] = timed(model.encode_documents, documents, 64)
    queries, true_columns = (float(model.log_logit_scale.detach().exp()) * embeddings).astype(np.float32), np.arange(len(test))
    exact, row["build_exact_s"] = timed(ExactIndex, G)
    ranks, row["rank_exact_s"] = timed(exact.ranks, queries, true_columns)
    row |= {"median_exact_rank": float(np.median(ranks)), "top1_share": float(np.mean(ranks == 0)),
            "rank_docs_per_min": 60 * len(test) / (row["encode_s"] + row["rank_exact_s"]), "rss_exact_gb": peak_rss_gb()}
    people = list(test) + [Person(f"synthetic-{i}", "", {}) for i in range(size - len(test))]
    reidentifier = NeuralReidentifier(model, people, "minilm_zero_shot", index=exact)
    row |= certificates_at_size(reidentifier, exact, test[:args.verify_docs], args.k, args.top_m)
    row["rss_certificates_gb"] = peak_rss_gb()
    if size in args.deid_sizes:
        row |= deidentify_at_size(reidentifier, test[:args.deid_docs], args.k)
    if faiss is not None:
        for kind in ["flat", "ivf"] + (["hnsw"] if size <= args.hnsw_max else []):
            index, row[f"build_{kind}_s"] = timed(FaissIndex, G, kind)
            short, row[f"rank_{kind}_s"] = timed(shortlist_ranks, index, queries, true_columns, args.top_m)
            row[f"rank_{kind}_docs_per_min"] = 60 * len(test) / (row["encode_s"] + row[f"rank_{kind}_s"])
            row[f"{kind}_rank_equal_below_m"] = float(np.mean(short[ranks < args.top_m] == ranks[ranks < args.top_m]))
            row[f"{kind}_rank_overstated"] = int((short > ranks).sum())
            row |= {f"{kind}_{name}": value for name, value in agreement(exact, index, queries, args.k).items()}
            del index
        row["rss_all_gb"] = peak_rss_gb()
    return row


def plot(table: pd.DataFrame, path: Path):
    "Cost against pool size (log x): build time, ranking and de-identification throughput, verification time, peak memory."
    figure, axes = plt.subplots(1, 4, figsize=(17, 4))
    for column, label in (("build_exact_s", "exact (memory map)"), ("build_flat_s", "FAISS flat"), ("build_ivf_s", "FAISS IVF"), ("build_hnsw_s", "FAISS HNSW")):
        if column in table:
            axes[0].plot(table.pool, table[column], "o-", label=label)
    for column, label in (("rank_docs_per_min", "rank, exact"), ("rank_flat_docs_per_min", "rank, FAISS flat shortlist"),
                          ("rank_ivf_docs_per_min", "rank, FAISS IVF shortlist"), ("deid_docs_per_min", "de-identify (approximate search)")):
        if column in table:
            axes[1].plot(table.pool, table[column], "o-", label=label)
    axes[2].plot(table.pool, table.verify_s_per_certificate, "o-", label="verify (K + 1 scores)")
    axes[2].plot(table.pool, table.fingerprint_s, "o-", label="model fingerprint (once)")
    for column, label in (("rss_exact_gb", "exact ranking"), ("rss_certificates_gb", "+ certificates"), ("rss_all_gb", "+ FAISS indexes")):
        if column in table:
            axes[3].plot(table.pool, table[column], "o-", label=label)
    axes[3].axhline(6, color="grey", ls="--", label="goal: 6 GB")
    for axis, title in zip(axes, ("index build (s)", "documents / minute", "seconds", "peak RSS (GB)")):
        axis.set(xscale="log", xlabel="candidate pool (synthetic + 200 real)", title=title)
        axis.legend(fontsize=7)
    axes[0].set_yscale("log"), axes[1].set_yscale("log"), axes[2].set_yscale("log")
    figure.suptitle("Cost against pool size, zero-shot MiniLM, 2 CPU cores (pools beyond 2,000 profiles are resampled embeddings)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 20_000, 200_000, 1_000_000])
    parser.add_argument("--deid-sizes", type=int, nargs="*", default=[2_000, 20_000])
    parser.add_argument("--deid-docs", type=int, default=8)
    parser.add_argument("--encoded", type=int, default=1_800, help="synthetic profiles actually encoded")
    parser.add_argument("--sigma", type=float, default=0.25)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--top-m", type=int, default=100)
    parser.add_argument("--verify-docs", type=int, default=50)
    parser.add_argument("--hnsw-max", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pool-file", type=Path, default=get_artifacts_dir() / "scale" / "pool.safetensors")
    parser.add_argument("--one-size", type=int, default=None, help="(internal) measure one size and print its row as JSON")
    parser.add_argument("--output", type=Path, default=ROOT / "figures" / "scale")
    args = parser.parse_args(argv)
    if args.one_size:
        print("ROW " + json.dumps(measure(args.one_size, args)))
        return
    if not args.pool_file.exists() or len(open_profile_embeddings(args.pool_file)) < max(args.sizes):
        data = load_dataset("wikibio_2000", data_dir=args.data_dir)
        args.pool_file.parent.mkdir(parents=True, exist_ok=True)
        made = build_pool_file(args.pool_file, data.split("test"), data.split("train") + data.split("validation"), max(args.sizes),
                               args.encoded, args.sigma, args.seed)
        print("pool file:", made)
    rows = []
    passed = [a for a in sys.argv[1:] if a not in ("--one-size",)] if argv is None else list(argv)
    for size in sorted(args.sizes):
        result = subprocess.run([sys.executable, __file__, *passed, "--one-size", str(size)], capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"pool {size} failed:\n{result.stderr[-3000:]}")
        rows.append(json.loads(next(l for l in result.stdout.splitlines() if l.startswith("ROW "))[4:]))
        print(pd.Series(rows[-1]).to_string(), flush=True)
    table = pd.DataFrame(rows)
    args.output.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.output / "scale.csv", index=False, float_format="%.4g")
    write_results(rows, "scale")
    plot(table, args.output / "scale.png")
    print(table.T.to_string())


if __name__ == "__main__":
    main()
