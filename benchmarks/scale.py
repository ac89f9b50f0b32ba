"""Cost as the candidate pool grows (issue 36, item 5): index build time, peak memory, ranking throughput, certificate
verification time and exact-vs-FAISS agreement for pools of 2k, 20k, 200k and 1M profiles; de-identification throughput
against the whole pool (by default at 2k and 20k) and with a shortlist per chunk of documents (every size), its certificates
verified against the whole pool.

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
from deid_nb.nn_deid.index import (
    ExactIndex,
    FaissIndex,
    faiss,
    open_profile_embeddings,
    save_profile_embeddings,
    shortlist_ranks,
    shortlist_scores,
)
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.nn_deid.registry import ZERO_SHOT, zero_shot_model
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
    chunks = [real, synthetic] + [
        resampled(synthetic, min(100_000, rest - s), sigma, rng) for s in range(0, rest, 100_000)
    ]
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
    return {
        "top1_agreement": float(np.mean(exact_top[:, 0] == found_top[:, 0])),
        "topk_overlap": float(np.mean(overlap)),
    }


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
        certificate = certify(
            text, reidentifier.candidate_ids[i], reidentifier, min(k, rank), scores=scores, fingerprint=fingerprint
        )
        check, took = timed(verify_certificate, text, certificate, reidentifier, fingerprint=fingerprint)
        certified, verified, seconds = certified + 1, verified + check.ok, seconds + [took]
    return {
        "fingerprint_s": fingerprint_s,
        "certificates": certified,
        "certificates_verified": verified,
        "verify_s_per_certificate": float(np.mean(seconds)) if seconds else float("nan"),
    }


def deidentify_at_size(reidentifier, people, k: int, shortlist: int | None, fingerprint: str) -> dict:
    """Docs/min of `deidentify` (approximate search, truncated to the window) against the whole pool or a shortlist per chunk;
    its certificates verified against the whole pool, and every certified text's exact rank over the whole pool."""
    cpu = time.process_time()
    results, seconds = timed(deidentify, people, reidentifier, k, long_documents="truncate", shortlist=shortlist)
    cpu = (
        time.process_time() - cpu
    )  # all this process's threads: unlike wall time, not slowed by other jobs on the machine
    certified = [r for r in results if r.certificate.goal_met]
    verified = sum(
        verify_certificate(r.text, r.certificate, reidentifier, fingerprint=fingerprint).ok for r in certified
    )
    exact = (
        reidentifier.ranks([r.text for r in certified], [r.certificate.person_id for r in certified])
        if certified
        else []
    )
    name = "deid_shortlist" if shortlist else "deid"
    return {
        f"{name}_docs": len(people),
        f"{name}_docs_per_min": 60 * len(people) / seconds,
        f"{name}_docs_per_cpu_min": 60 * len(people) / cpu,
        f"{name}_certified": len(certified),
        f"{name}_verified": verified,
        f"{name}_reidentified": int(sum(r < k for r in exact)),
        f"{name}_masked": float(np.mean([r.certificate.fraction_masked for r in results])),
        f"{name}_scored": float(np.mean([r.certificate.shortlist or len(reidentifier.candidate_ids) for r in results])),
    }


def measure(size: int, args) -> dict:
    "Everything measured at one pool size (run in its own process, so peak RSS is this size's)."
    data = load_dataset("wikibio_2000", data_dir=args.data_dir)
    test, model = data.split("test"), zero_shot_model()
    G = open_profile_embeddings(args.pool_file)[:size]
    documents = [p.document for p in test]
    row = {
        "pool": size,
        "synthetic": size - len(test),
        "k": args.k,
        "shortlist_m": args.shortlist,
        "rss_start_gb": peak_rss_gb(),
    }
    embeddings, row["encode_s"] = timed(model.encode_documents, documents, 64)
    queries, true_columns = (
        (float(model.log_logit_scale.detach().exp()) * embeddings).astype(np.float32),
        np.arange(len(test)),
    )
    exact, row["build_exact_s"] = timed(ExactIndex, G)
    ranks, row["rank_exact_s"] = timed(exact.ranks, queries, true_columns)
    row |= {
        "median_exact_rank": float(np.median(ranks)),
        "top1_share": float(np.mean(ranks == 0)),
        "rank_docs_per_min": 60 * len(test) / (row["encode_s"] + row["rank_exact_s"]),
        "rss_exact_gb": peak_rss_gb(),
    }
    people = list(test) + [Person(f"synthetic-{i}", "", {}) for i in range(size - len(test))]
    reidentifier = NeuralReidentifier(model, people, ZERO_SHOT, index=exact)
    row |= certificates_at_size(reidentifier, exact, test[: args.verify_docs], args.k, args.top_m)
    row["rss_certificates_gb"] = peak_rss_gb()
    fingerprint = model_fingerprint(reidentifier)
    if size in args.deid_sizes:
        row |= deidentify_at_size(reidentifier, test[: args.deid_docs], args.k, None, fingerprint)
    if size in args.shortlist_sizes:
        row |= deidentify_at_size(reidentifier, test[: args.deid_docs], args.k, args.shortlist, fingerprint)
    row["rss_deid_gb"] = peak_rss_gb()
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
    figure, axes = plt.subplots(1, 4, figsize=(17, 5.6))
    for column, label in (
        ("build_exact_s", "exact (memory map)"),
        ("build_flat_s", "FAISS flat"),
        ("build_ivf_s", "FAISS IVF"),
        ("build_hnsw_s", "FAISS HNSW"),
    ):
        if column in table:
            axes[0].plot(table.pool, table[column], "o-", label=label)
    for column, label in (
        ("rank_docs_per_min", "rank, exact"),
        ("rank_flat_docs_per_min", "rank, FAISS flat shortlist"),
        ("rank_ivf_docs_per_min", "rank, FAISS IVF shortlist"),
        ("deid_docs_per_min", "de-identify, whole pool"),
        ("deid_shortlist_docs_per_min", "de-identify, shortlist per chunk"),
    ):
        if column in table:
            axes[1].plot(table.pool, table[column], "o-", label=label)
    for column, label, colour in (
        ("deid_docs_per_cpu_min", "de-identify, whole pool, per CPU-minute", "tab:red"),
        ("deid_shortlist_docs_per_cpu_min", "de-identify, shortlist, per CPU-minute", "tab:purple"),
    ):
        if column in table:
            axes[1].plot(table.pool, table[column], "s--", color=colour, label=label)
    axes[2].plot(table.pool, table.verify_s_per_certificate, "o-", label="verify (K + 1 scores)")
    axes[2].plot(table.pool, table.fingerprint_s, "o-", label="model fingerprint (once)")
    for column, label in (
        ("rss_exact_gb", "exact ranking"),
        ("rss_certificates_gb", "+ certificates"),
        ("rss_deid_gb", "+ de-identification"),
        ("rss_all_gb", "+ FAISS indexes"),
    ):
        if column in table:
            axes[3].plot(table.pool, table[column], "o-", label=label)
    axes[3].axhline(6, color="grey", ls="--", label="goal: 6 GB")
    for axis, title in zip(
        axes, ("index build (s)", "documents / minute (wall; dashed: CPU)", "seconds", "peak RSS (GB)")
    ):
        axis.set(xscale="log", xlabel="candidate pool (synthetic + 200 real)", title=title)
        axis.legend(
            fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False
        )  # below: never over the data
    axes[0].set_yscale("log"), axes[1].set_yscale("log"), axes[2].set_yscale("log")
    figure.suptitle(
        "Cost against pool size, zero-shot MiniLM, 2 CPU cores (pools beyond 2,000 profiles are resampled embeddings)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120)


GOAL_THROUGHPUT, GOAL_RSS_GB = (
    0.5,
    6.0,
)  # issue 36: at 1M profiles, at least half the 2k whole-pool throughput, within 6 GB


def _verdict(row, baseline) -> str:
    "One sentence on the largest pool (`row`) against the goals and the smallest whole-pool run (`baseline`), read from the table."
    share, rss = row.deid_shortlist_docs_per_cpu_min / baseline.deid_docs_per_cpu_min, row.rss_deid_gb
    verified, certified, found = (
        int(row.deid_shortlist_verified),
        int(row.deid_shortlist_certified),
        int(row.deid_shortlist_reidentified),
    )
    met = (
        share >= GOAL_THROUGHPUT
        and rss <= GOAL_RSS_GB
        and verified == certified == int(row.deid_shortlist_docs)
        and found == 0
    )
    return (
        f"At {int(row.pool):,} profiles, de-identifying with a shortlist runs at {row.deid_shortlist_docs_per_cpu_min:.1f} documents "
        f"per CPU-minute, {share:.0%} of the whole-pool rate at {int(baseline.pool):,} profiles, in {rss:.1f} GB, with {verified} of "
        f"{certified} certificates verified against the whole pool and {found} certified texts re-identified: the goal (at least "
        f"half the rate, at most 6 GB, every certificate verified) is {'met' if met else 'NOT met'}."
    )


def _noise(whole: pd.DataFrame) -> str:
    "How far apart the whole-pool rates are, which a quiet machine would give nearly equal at 2k and 20k: the measurement's noise."
    if len(whole) < 2:
        return ""
    low, high = whole.deid_docs_per_cpu_min.min(), whole.deid_docs_per_cpu_min.max()
    return (
        f"Read the rates with their noise: the whole-pool rate, which should barely change between {int(whole.pool.min()):,} and "
        f"{int(whole.pool.max()):,} profiles, was measured at {low:.1f} and {high:.1f} documents per CPU-minute in this run "
        "(other jobs shared the machine)."
    )


def _cells(table: pd.DataFrame) -> pd.DataFrame:
    "The table as text: whole numbers with thousands separators, others to 4 significant digits, a dash where not measured."
    show = lambda v: "–" if pd.isna(v) else f"{int(v):,}" if float(v).is_integer() else f"{v:.4g}"
    return table.apply(lambda column: column.map(show))


def scale_page(table: pd.DataFrame) -> str:
    "figures/scale/README.md: what was measured, the table, the figure and the goal's verdict, each number read from `table`."
    whole = table.dropna(subset=["deid_docs_per_min"]).sort_values("pool")
    largest = table.dropna(subset=["deid_shortlist_docs_per_min"]).sort_values("pool").iloc[-1]
    columns = {
        "pool": "pool",
        "rank_docs_per_min": "rank docs/min (exact)",
        "deid_docs_per_min": "de-id docs/min (whole pool)",
        "deid_shortlist_docs_per_min": "de-id docs/min (shortlist)",
        "deid_docs_per_cpu_min": "de-id docs/CPU-min (whole)",
        "deid_shortlist_docs_per_cpu_min": "de-id docs/CPU-min (shortlist)",
        "deid_shortlist_scored": "candidates scored",
        "deid_masked": "% masked (whole)",
        "deid_shortlist_masked": "% masked (shortlist)",
        "deid_shortlist_verified": "certificates verified",
        "deid_shortlist_reidentified": "re-identified (exact rank < K)",
        "verify_s_per_certificate": "verify s / certificate",
        "rss_deid_gb": "peak RSS GB",
    }
    shown = table[[c for c in columns if c in table]].sort_values("pool").copy()
    for name in ("deid_masked", "deid_shortlist_masked"):
        if name in shown:
            shown[name] = (100 * shown[name]).round(1)
    lines = [
        "# Scale: cost against candidate-pool size",
        "",
        "Generated by `benchmarks/scale.py` from `scale.csv` (see the script's docstring for how the pools are made: the 200 real",
        "WikiBio-2000 test people plus synthetic profiles; beyond 2,000 the synthetic profiles are resampled embeddings). Zero-shot",
        f"MiniLM re-identifier, approximate search to K = {int(table.k.iloc[0])} (shortlist: each document's {int(table.shortlist_m.iloc[0])} "
        "best candidates, per chunk of 32 documents), documents truncated to the model's window, 2 CPU cores. Throughput is given",
        "per wall-clock minute and per CPU-minute of the measuring process (all its threads); the verdict uses CPU time, which",
        "other jobs on the machine inflate less than wall time.",
        "",
        _verdict(largest, whole.iloc[0]) if len(whole) else "No whole-pool de-identification was measured.",
        "",
        _noise(whole),
        "",
        _cells(shown.rename(columns=columns)).to_markdown(index=False, disable_numparse=True),
        "",
        "![cost against pool size](scale.png)",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 20_000, 200_000, 1_000_000])
    parser.add_argument(
        "--deid-sizes", type=int, nargs="*", default=[2_000, 20_000], help="pools de-identified against whole"
    )
    parser.add_argument(
        "--shortlist-sizes",
        type=int,
        nargs="*",
        default=[2_000, 20_000, 200_000, 1_000_000],
        help="pools de-identified with a shortlist per chunk",
    )
    parser.add_argument(
        "--shortlist", type=int, default=100, help="each document's best candidates in its chunk's shortlist"
    )
    parser.add_argument("--deid-docs", type=int, default=32)
    parser.add_argument("--encoded", type=int, default=1_800, help="synthetic profiles actually encoded")
    parser.add_argument("--sigma", type=float, default=0.25)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--top-m", type=int, default=100)
    parser.add_argument("--verify-docs", type=int, default=50)
    parser.add_argument("--hnsw-max", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pool-file", type=Path, default=get_artifacts_dir() / "scale" / "pool.safetensors")
    parser.add_argument(
        "--one-size", type=int, default=None, help="(internal) measure one size and print its row as JSON"
    )
    parser.add_argument(
        "--page-only", action="store_true", help="only redraw the figure and the page from the committed scale.csv"
    )
    parser.add_argument("--output", type=Path, default=ROOT / "figures" / "scale")
    args = parser.parse_args(argv)
    if args.one_size:
        print("ROW " + json.dumps(measure(args.one_size, args)))
        return
    if args.page_only:
        table = pd.read_csv(args.output / "scale.csv")
        plot(table, args.output / "scale.png")
        (args.output / "README.md").write_text(scale_page(table), encoding="utf-8")
        return
    if not args.pool_file.exists() or len(open_profile_embeddings(args.pool_file)) < max(args.sizes):
        data = load_dataset("wikibio_2000", data_dir=args.data_dir)
        args.pool_file.parent.mkdir(parents=True, exist_ok=True)
        made = build_pool_file(
            args.pool_file,
            data.split("test"),
            data.split("train") + data.split("validation"),
            max(args.sizes),
            args.encoded,
            args.sigma,
            args.seed,
        )
        print("pool file:", made)
    rows = []
    passed = [a for a in sys.argv[1:] if a not in ("--one-size",)] if argv is None else list(argv)
    for size in sorted(args.sizes):
        result = subprocess.run(
            [sys.executable, __file__, *passed, "--one-size", str(size)], capture_output=True, text=True
        )
        if result.returncode:
            raise RuntimeError(f"pool {size} failed:\n{result.stderr[-3000:]}")
        rows.append(json.loads(next(l for l in result.stdout.splitlines() if l.startswith("ROW "))[4:]))
        print(pd.Series(rows[-1]).to_string(), flush=True)
    table = pd.DataFrame(rows)
    args.output.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.output / "scale.csv", index=False, float_format="%.4g")
    write_results(rows, "scale")
    plot(table, args.output / "scale.png")
    (args.output / "README.md").write_text(scale_page(table), encoding="utf-8")
    print(table.T.to_string())


if __name__ == "__main__":
    main()
