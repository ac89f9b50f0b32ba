"""Issue 36, item 3: sharded, resumable batch de-identification. A BM25 de-identifier saved on 12 synthetic people (no training),
three shards of four documents; every output is compared byte for byte."""

import hashlib
import json
import os
from pathlib import Path

import pytest

import deid_nb.nn_deid.batch as batch
from deid_nb.nn_deid.batch import ShardWorker, deidentify_shards
from deid_nb.nn_deid.shards import find_shards
from deid_nb.nn_deid.pipeline import Deidentifier
from deid_nb.people import make_synthetic_people
from deid_nb.reidentifier import BM25Reidentifier
from deid_nb.cli import main

ROOT = Path(__file__).resolve().parents[1]
PEOPLE = make_synthetic_people(12)
SALT = "pepper"


def _write_jsonl(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    "A saved hash de-identifier (its salt saved with it) and a folder of three shards."
    root = tmp_path_factory.mktemp("batch")
    Deidentifier(BM25Reidentifier(PEOPLE), PEOPLE, operator="hash", salt=SALT).save_pretrained(root / "model")
    (root / "in").mkdir()
    for i in range(3):
        _write_jsonl(
            root / "in" / f"part-{i}.jsonl",
            [{"id": p.person_id, "document": p.document} for p in PEOPLE[4 * i : 4 * i + 4]],
        )
    return root


@pytest.fixture(scope="module")
def reference(setup):
    "One uninterrupted run with one worker: {file name: bytes} of the output folder."
    deidentify_shards(find_shards(setup / "in"), setup / "model", setup / "reference")
    return _files(setup / "reference")


def _files(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_reference_run_writes_a_shard_per_shard_and_a_manifest(setup, reference):
    assert sorted(reference) == ["manifest.json", "part-0.jsonl", "part-1.jsonl", "part-2.jsonl"]
    manifest = json.loads(reference["manifest.json"])
    entry = manifest["shards"]["part-1.jsonl"]
    assert (entry["read"], entry["written"], entry["skipped"]) == (4, 4, 0)
    assert entry["input_sha256"] == hashlib.sha256((setup / "in" / "part-1.jsonl").read_bytes()).hexdigest()
    assert entry["output_sha256"] == hashlib.sha256(reference["part-1.jsonl"]).hexdigest()
    assert entry["settings"]["salt"] == "sha256:" + hashlib.sha256(SALT.encode()).hexdigest()  # never the salt itself
    assert SALT not in reference["manifest.json"].decode()


def test_hash_uses_the_saved_salt(reference):
    "Every worker hashes with the salt saved in the model folder, as Presidio's hash: SHA-256(words + salt)."
    for line in reference["part-0.jsonl"].decode().splitlines():
        record = json.loads(line)
        original = next(p.document for p in PEOPLE if p.person_id == record["id"])
        for span in record["spans"]:
            words = original[span["start"] : span["end"]]
            assert span["replacement"] == hashlib.sha256((words + SALT).encode()).hexdigest()


def test_two_workers_write_the_same_bytes(setup, reference):
    deidentify_shards(find_shards(setup / "in"), setup / "model", setup / "two", workers=2)
    assert _files(setup / "two") == reference


def test_a_killed_run_resumes_byte_identical(setup, reference, monkeypatch):
    "A run killed during its second shard leaves a manifest of the first; the rerun does only the rest, and the bytes are the same."
    run, done = ShardWorker.run, []

    def dies_on_the_second(self, task):
        if done:
            raise KeyboardInterrupt  # what SIGINT does; a SIGKILL leaves the same files (every write is atomic)
        done.append(task["name"])
        return run(self, task)

    monkeypatch.setattr(ShardWorker, "run", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        deidentify_shards(find_shards(setup / "in"), setup / "model", setup / "killed")
    assert list(json.loads((setup / "killed" / "manifest.json").read_text())["shards"]) == ["part-0.jsonl"]
    monkeypatch.setattr(ShardWorker, "run", lambda self, task: done.append(task["name"]) or run(self, task))
    deidentify_shards(find_shards(setup / "in"), setup / "model", setup / "killed")
    assert done == ["part-0.jsonl", "part-1.jsonl", "part-2.jsonl"]  # part-0 was not done again
    assert _files(setup / "killed") == reference


def test_a_lost_output_or_manifest_entry_is_redone(setup, reference, monkeypatch):
    out = setup / "lost"
    deidentify_shards(find_shards(setup / "in"), setup / "model", out)
    (out / "part-0.jsonl").unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["shards"]["part-2.jsonl"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "part-1.jsonl").write_bytes(
        reference["part-1.jsonl"][:-10]
    )  # a truncated output: its SHA-256 no longer matches
    run, done = ShardWorker.run, []
    monkeypatch.setattr(ShardWorker, "run", lambda self, task: done.append(task["name"]) or run(self, task))
    deidentify_shards(find_shards(setup / "in"), setup / "model", out)
    assert sorted(done) == ["part-0.jsonl", "part-1.jsonl", "part-2.jsonl"]
    assert _files(out) == reference
    done.clear()
    deidentify_shards(find_shards(setup / "in"), setup / "model", out)
    assert done == []  # everything finished: nothing runs, nothing is loaded


def test_bad_records_go_to_the_side_file(setup, tmp_path):
    good = {"id": PEOPLE[0].person_id, "document": PEOPLE[0].document}
    shard = _write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            good,
            "{broken",
            {"document": "no id"},
            {"id": "stranger", "document": "x y"},
            {"id": PEOPLE[1].person_id, "document": "  "},
            good,
        ],
    )
    manifest = deidentify_shards([shard], setup / "model", tmp_path / "out")
    entry = manifest["shards"]["mixed.jsonl"]
    assert (entry["read"], entry["written"], entry["skipped"], entry["skipped_file"]) == (
        6,
        1,
        5,
        "mixed.skipped.jsonl",
    )
    side = [json.loads(line) for line in (tmp_path / "out" / "mixed.skipped.jsonl").read_text().splitlines()]
    assert [(s["line"], s["reason"]) for s in side] == [
        (2, "not valid JSON (Expecting property name enclosed in double quotes)"),
        (3, "no 'id'"),
        (4, "the id is not in the model's candidate pool"),
        (5, "no 'document'"),
        (6, "the id repeats line 1"),
    ]


@pytest.fixture()
def no_models(monkeypatch):
    def trap(*args, **kwargs):
        raise AssertionError("a model was loaded before the arguments were checked")

    monkeypatch.setattr(Deidentifier, "from_pretrained", classmethod(trap))


@pytest.mark.parametrize(
    "case, message",
    [
        ("bad glob", "no shards there"),
        ("no model", "need a saved de-identifier"),
        ("output is a file", "is a file"),
        ("corpus pseudonyms", "use --scope document"),
        ("hash without salt", "needs a fixed salt"),
    ],
)
def test_mistakes_are_one_line_before_any_model(setup, tmp_path, capsys, no_models, case, message):
    (tmp_path / "file.txt").write_text("x")
    bare = tmp_path / "bare"
    bare.mkdir()
    settings = {"k": 1, "placeholder": "<mask>", "search": "approximate", "long_documents": "windows"}
    (bare / "deidentifier.json").write_text(  # complete settings; the re-identifier is never loaded
        json.dumps({"format": 1, "reidentifier": {"kind": "bm25"}, **settings, "operator": "replace"})
    )
    arguments = {
        "bad glob": [str(setup / "in" / "*.csv"), "--model", str(setup / "model"), "-o", str(tmp_path / "out")],
        "no model": [str(setup / "in"), "-o", str(tmp_path / "out")],
        "output is a file": [str(setup / "in"), "--model", str(setup / "model"), "-o", str(tmp_path / "file.txt")],
        "corpus pseudonyms": [
            str(setup / "in"),
            "--model",
            str(setup / "model"),
            "--operator",
            "pseudonym",
            "--scope",
            "corpus",
            "-o",
            str(tmp_path / "out"),
        ],
        "hash without salt": [
            str(setup / "in"),
            "--model",
            str(bare),
            "--operator",
            "hash",
            "-o",
            str(tmp_path / "out"),
        ],
    }[case]
    assert main(["deidentify", *arguments]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error, error


def test_the_command_line_writes_csv_shards_and_resumes(setup, tmp_path, capsys):
    arguments = [
        "deidentify",
        str(setup / "in" / "part-*.jsonl"),
        "--model",
        str(setup / "model"),
        "--format",
        ".csv",
        "-o",
        str(tmp_path),
    ]
    assert main(arguments) == 0
    assert "3 shards: 12 read, 12 written, 0 skipped, 0 uncertified" in capsys.readouterr().out
    first = _files(tmp_path)
    assert sorted(first) == ["manifest.json", "part-0.csv", "part-1.csv", "part-2.csv"]
    (tmp_path / "part-2.csv").unlink()
    assert main(arguments) == 0 and _files(tmp_path) == first


def test_the_ray_engine_writes_the_same_bytes(setup, reference):
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}},
    )
    try:
        deidentify_shards(find_shards(setup / "in"), setup / "model", setup / "ray", engine="ray", workers=2)
    finally:
        ray.shutdown()
    assert _files(setup / "ray") == reference
