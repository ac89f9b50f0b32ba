"""Certificates are about the released text: re-score it, for every output option.

For each re-identifier and each output option (placeholders incl. [REDACTED], merged and unmerged spans, each operator,
each long-document policy), de-identify WikiBio-mini test documents with `Deidentifier.transform`, then score the
released `text` alone, afresh, with the same model, and verify each certificate with its K witnesses
(`deid_nb.nn_deid.certificate.audit_certificates`). Prints, per option, "0 of N certified texts re-identified".

    DEID_NB_DATA=../shared/data .venv/bin/python benchmarks/certificate_audit.py \
        --reidentifiers bm25 zero_shot nn_uniform --documents 60 --k 4
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from deid_nb.data import load_dataset
from deid_nb.nn_deid.certificate import audit_certificates
from deid_nb.nn_deid.pipeline import Deidentifier
from deid_nb.nn_deid.registry import ZERO_SHOT

OPTIONS = {  # name: Deidentifier settings (beside the model, the pool and k)
    "<mask>, merged": {},
    "[REDACTED], merged": {"placeholder": "[REDACTED]"},
    "[REDACTED], one per word": {"placeholder": "[REDACTED]", "merge": False},
    "<ENTITY_TYPE>, merged": {"placeholder": "<{entity_type}>"},
    "redact": {"operator": "redact"},
    "hash (salted)": {"operator": "hash", "salt": "an-audit-salt-of-16+"},
    "pseudonym per document": {"operator": "pseudonym"},
    "pseudonym per corpus": {"operator": "pseudonym", "scope": "corpus"},
    "[REDACTED], mask_tail": {"placeholder": "[REDACTED]", "long_documents": "mask_tail"},
    "[REDACTED], truncate": {"placeholder": "[REDACTED]", "long_documents": "truncate"},
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="wikibio_mini")
    parser.add_argument("--reidentifiers", nargs="+", default=["bm25", ZERO_SHOT])
    parser.add_argument("--documents", type=int, default=60, help="test documents per option (0: all)")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--options", nargs="+", choices=sorted(OPTIONS), default=list(OPTIONS))
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    test = dataset.split("test")[: args.documents or None]
    failures = 0
    for name in args.reidentifiers:
        model = Deidentifier.fit(dataset, name, k=args.k).reidentifier
        for option in args.options:
            start = time.perf_counter()
            redactions = Deidentifier(model, dataset.people, k=args.k, **OPTIONS[option]).transform(
                test, progress=False
            )
            audit = audit_certificates([r.text for r in redactions], [r.certificate for r in redactions], model)
            failures += audit["reidentified"] + audit["certified"] - audit["verified"]
            print(
                f"{name:>18} | {option:<26} | {audit['reidentified']} of {audit['certified']} certified texts re-identified; "
                f"{audit['verified']} of {audit['certified']} verified; {audit['certified']} of {audit['documents']} certified "
                f"(k={args.k}, {time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
