"""Scale: the full WikiBio release streamed into Parquet shards, and bi-encoder training over several processes."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from deid_nb.data import dataset_path, load_wikibio_raw
from deid_nb.nn_deid.model import BiEncoder, tiny_config
from deid_nb.nn_deid.training import TrainingConfig
from deid_nb.nn_deid.training_run import train_bi_encoder
from deid_nb.people import PeopleDataset, make_synthetic_people
from deid_nb.wikibio_shards import iter_wikibio_raw, read_wikibio_shards, write_wikibio_shards

SAMPLE = dataset_path("wikibio_raw_sample", download=False) if os.environ.get("DEID_NB_DATA") else None
needs_sample = pytest.mark.skipif(
    SAMPLE is None or not SAMPLE.exists(), reason="DEID_NB_DATA with wikibio_raw_sample not set"
)


@needs_sample
def test_shards_round_trip_and_resume_byte_identical(tmp_path):
    "Shards hold what the in-memory loader reads; a killed run resumes, keeps finished shards, writes the same bytes."
    manifest = write_wikibio_shards(SAMPLE / "valid", tmp_path / "valid", shard_size=30)
    assert [s["records"] for s in manifest["shards"]] == [30, 30, 30, 10] and manifest["people"] == 100
    assert list(read_wikibio_shards(tmp_path / "valid")) == list(load_wikibio_raw(SAMPLE / "valid"))
    first = (tmp_path / "valid" / "valid-00000.parquet").stat().st_mtime_ns
    (tmp_path / "valid" / "valid-00002.parquet").unlink()  # a kill after shard 2 was recorded but before it survived
    assert write_wikibio_shards(SAMPLE / "valid", tmp_path / "valid", shard_size=30) == manifest
    assert (tmp_path / "valid" / "valid-00000.parquet").stat().st_mtime_ns == first


@needs_sample
def test_streaming_reader_matches_the_loader():
    assert list(iter_wikibio_raw(SAMPLE / "train")) == list(load_wikibio_raw(SAMPLE / "train"))


CONFIG = dict(
    epochs=2,
    batch_size=8,
    frozen_layers=1,
    num_threads=1,
    precision="float32",
    profile_epochs=(0,),
    max_validation_documents=4,
)


def _train(directory, distributed: bool) -> dict:
    "Train the tiny bi-encoder from the same random init; its final weights."
    torch.manual_seed(0)
    model = BiEncoder(tiny_config())
    for (
        module
    ) in model.modules():  # dropout draws differ with the batch's shape; without it the steps are deterministic
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "dropout_prob"):
            module.dropout_prob = 0.0
    dataset = PeopleDataset.from_people("synthetic30", make_synthetic_people(30, seed=0))
    train_bi_encoder(model, dataset, TrainingConfig(**CONFIG, distributed=distributed), directory, progress=False)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _worker(rank: int, world: int, port: int, directory: str, out: str):
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        weights = _train(directory, distributed=True)
        torch.save(weights, f"{out}-{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_processes_give_one_process_weights(tmp_path):
    "Data parallel over 2 gloo processes (global batch 8 = 2 × 4) ends where one process with batch 8 ends."
    single = _train(tmp_path / "single", distributed=False)
    torch.manual_seed(0)
    initial = BiEncoder(tiny_config()).state_dict()
    assert not torch.allclose(
        initial["document_projection.weight"], single["document_projection.weight"], atol=1e-4
    )  # it learned
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path / "ddp"), str(tmp_path / "weights")), nprocs=2, join=True)
    for rank in (0, 1):
        weights = torch.load(tmp_path / f"weights-{rank}.pt")
        assert weights.keys() == single.keys()
        for name, value in single.items():
            assert torch.allclose(weights[name], value, atol=1e-5, rtol=1e-4), (rank, name)
    assert (tmp_path / "ddp" / "training.json").exists()


RECIPE = '''
import sys
import torch
from deid_nb.nn_deid.model import tiny_config
from deid_nb.nn_deid.registry import NeuralSpec, load_reidentifier
from deid_nb.nn_deid.training import TrainingConfig
from deid_nb.people import PeopleDataset
from deid_nb.wikibio_shards import read_wikibio_shards

torch.distributed.init_process_group("gloo")  # torchrun gives each process its rank, the world size and the rendezvous
shards, artifacts = sys.argv[1:3]
people = PeopleDataset.from_people("wikibio_sample", list(read_wikibio_shards(shards)))
tiny = {"tiny": NeuralSpec("a tiny bi-encoder", tiny_config(), TrainingConfig(epochs=1, batch_size=8, num_threads=1, precision="float32"))}
model = load_reidentifier("tiny", people, artifacts, registry=tiny, progress=False, distributed=True)
rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
with open(f"{artifacts}/rank{rank}.txt", "w") as f:  # a file per process: their shared stdout may interleave a line
    f.write(f"RANK {rank} WORLD {world} TRAINED_IN {model.trained_in}")
torch.distributed.destroy_process_group()
'''


@needs_sample
def test_the_torchrun_recipe_trains_a_registered_model(tmp_path):
    "The README's recipe at toy size: shard the raw release, then `torchrun --nproc_per_node 2` trains one run on both processes."
    write_wikibio_shards(SAMPLE / "train", tmp_path / "shards", shard_size=50)
    (tmp_path / "recipe.py").write_text(RECIPE, encoding="utf-8")
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run(
        [
            str(torchrun),
            "--nproc_per_node",
            "2",
            "--master_port",
            str(_free_port()),
            str(tmp_path / "recipe.py"),
            str(tmp_path / "shards"),
            str(tmp_path / "artifacts"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [(tmp_path / "artifacts" / f"rank{r}.txt").read_text(encoding="utf-8") for r in (0, 1)]
    ranks = [re.fullmatch(r"RANK (\d+) WORLD (\d+) TRAINED_IN (\S+)", report).groups() for report in reports]
    assert [rank[:2] for rank in ranks] == [("0", "2"), ("1", "2")], reports
    assert len({rank[2] for rank in ranks}) == 1  # one run directory, written by process 0
    assert (Path(ranks[0][2]) / "training.json").exists()
