"""The GPU check of issue 36: the same three steps on an accelerator and on the CPU, in one run, and the speed-up.

1. **train**: a re-identifier (the packaged MiniLM bi-encoder, `train_reidentifier`) for one short epoch on a WikiBio-2000 subset;
2. **table 2 (quick)**: NN DeID (`deidentify`, approximate search, K=1) of a few test documents against that model, with the
   % of words masked and the share certified (the quick size of Table 2, much smaller);
3. **search benchmark**: the approximate and the exact greedy search on the same documents to `--k` (as `search_speed.py`).

Every step runs on `--device` (default: CUDA) and then on the CPU, from the same seed; it prints one table of seconds and the
speed-up. Needs only torch, transformers (4 or 5), sentence-transformers and this checkout: the encoder is the packaged MiniLM
(`deid_nb.encoders.resolve_encoder`), nothing is downloaded, and WikiBio-2000 is read from `--data-dir` (default $DEID_NB_DATA).
On a GPU machine (defaults: 1,000 people, 5 documents, k=5; the CPU half is the long one, a few minutes on 16 cores):

    DEID_NB_DATA=<data> python benchmarks/gpu_check.py --output gpu_check.json

Here, CPU only (tiny sizes, a minute or two; both columns are the CPU):

    DEID_NB_DATA=/work/shared/data python benchmarks/gpu_check.py --device cpu --people 120 --docs 2 --k 2 --max-tokens 64
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

from deid_nb.core import resolve_device, seed_everything
from deid_nb.data import load_dataset
from deid_nb.encoders import device_summary
from deid_nb.metrics import percent_masked
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.model import BiEncoderConfig
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.nn_deid.training import TrainingConfig
from deid_nb.nn_deid.training_run import train_reidentifier
from deid_nb.people import PeopleDataset


def _synchronise(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, step):
    "(step's result, seconds), the device's queued work included."
    _synchronise(device)
    started = time.perf_counter()
    result = step()
    _synchronise(device)
    return result, time.perf_counter() - started


def run_steps(device: torch.device, dataset: PeopleDataset, args, artifacts: str) -> dict:
    "The three steps on `device`: seconds, and what they produced (to compare the two devices)."
    seed_everything(0)
    model_config = BiEncoderConfig(max_document_tokens=args.max_tokens, max_profile_tokens=args.max_tokens)
    training = TrainingConfig(epochs=1, batch_size=args.batch_size, max_validation_documents=args.docs)
    trained, train_seconds = timed(
        device,
        lambda: train_reidentifier(
            dataset,
            model_config,
            training,
            artifacts,
            f"gpu_check_{device.type}",
            retrain=True,
            progress=False,
            device=device,
        ),
    )
    reidentifier = NeuralReidentifier(trained.model.eval(), dataset.people, "gpu_check")
    people = dataset.split("test")[: args.docs]
    originals = [p.document for p in people]
    row = {
        "device": device_summary(device),
        "train_seconds": train_seconds,
        "documents_per_second_trained": round(len(dataset.split("train")) / train_seconds, 2),
    }
    table2, row["table2_seconds"] = timed(
        device, lambda: deidentify(people, reidentifier, 1, long_documents="truncate")
    )
    row["table2_percent_masked"] = percent_masked([r.text for r in table2], originals)
    row["table2_certified"] = float(np.mean([r.certificate.goal_met for r in table2]))
    for search in ("approximate", "greedy"):
        found, row[f"search_{search}_seconds"] = timed(
            device, lambda: deidentify(people, reidentifier, args.k, search=search, long_documents="truncate")
        )
        row[f"search_{search}_percent_masked"] = percent_masked([r.text for r in found], originals)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="cuda", help="the accelerator to compare with the CPU (auto, cpu, cuda, cuda:N)"
    )
    parser.add_argument(
        "--people", type=int, default=1000, help="WikiBio-2000 people used (training split and candidate pool)"
    )
    parser.add_argument("--docs", type=int, default=5, help="test documents de-identified in steps 2 and 3")
    parser.add_argument("--k", type=int, default=5, help="search benchmark: the privacy level searched to")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=128, help="document and profile window (paper: 128)")
    parser.add_argument("--data-dir", help="folder holding WikiBio-2000 (default: $DEID_NB_DATA)")
    parser.add_argument("--output", help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    accelerator = resolve_device(args.device)
    full = load_dataset("wikibio_2000", args.data_dir)
    dataset = PeopleDataset.from_people(f"wikibio_2000_first{args.people}", list(full.people)[: args.people])
    print(
        f"{device_summary(accelerator)}; torch {torch.__version__}; {len(dataset.people)} people, {args.docs} documents, k={args.k}"
    )
    with tempfile.TemporaryDirectory() as artifacts:
        rows = [run_steps(device, dataset, args, artifacts) for device in (accelerator, torch.device("cpu"))]
    fast, cpu = rows
    print(f"{'step':<28}{'accelerator s':>15}{'cpu s':>10}{'speed-up':>10}")
    for step in ("train_seconds", "table2_seconds", "search_approximate_seconds", "search_greedy_seconds"):
        print(f"{step:<28}{fast[step]:>15.1f}{cpu[step]:>10.1f}{cpu[step] / fast[step]:>9.1f}x")
    for key in (
        "table2_percent_masked",
        "table2_certified",
        "search_approximate_percent_masked",
        "search_greedy_percent_masked",
    ):
        print(f"{key:<36} accelerator {fast[key]:.3f}   cpu {cpu[key]:.3f}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"rows": rows, "arguments": vars(args), "torch": torch.__version__}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
