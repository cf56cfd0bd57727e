"""Digests of our packing output on the evaluation sets: a change that must not change
prompts shows the same file before and after.

    python -m benchmarks.identity [--data-dir ../shared/data] [--limit 300]
        [--budgets 150 512 2048] --out FILE

Packs the first `--limit` questions of every dataset (`benchmarks.quality`) at
each budget, with the default conflict rules and with the `slot` rule on too,
and writes one line per packed request: dataset, budget, rules, request id and
the SHA-256 of its prompt, manifest and exclusions as JSON. Run it on the old
tree (e.g. `git archive <commit> | tar -x -C DIR`, then `PYTHONPATH=DIR`) and on
the new one, and `cmp` the two files; stdout shows one digest per dataset,
budget and rules, to find where they differ.
"""

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.adapters import DEFAULT_DATA_DIR, EVAL_TIME, DataMissingError, catalog_documents
from benchmarks.offline_tiktoken import offline_cl100k_cache
from benchmarks.quality import DATASETS
from packer import Catalog, PackerRuntime, PackResult, pack_request
from schemas import PackingConfig

BUDGETS = (150, 512, 2048)
RULES = (("copy",), ("copy", "slot"))


def digest(result: PackResult) -> str:
    """SHA-256 of everything a packed request gives: prompt, manifest, exclusions."""
    parts = [result.prompt.model_dump_json(), result.manifest.model_dump_json()]
    parts += [x.model_dump_json() for x in result.exclusions]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def digests(data_dir: Path, limit: int, budgets: Sequence[int]) -> list[str]:
    """One line per dataset, budget, rules and request; a summary line per group on stdout."""
    cases = {name: dataset.load(data_dir, limit) for name, dataset in DATASETS.items()}
    catalog = Catalog(catalog_documents([c.request for cs in cases.values() for c in cs]))
    runtime = PackerRuntime.load()
    lines = []
    for budget in budgets:
        for rules in RULES:
            config = PackingConfig(
                max_evidence_tokens=budget, dedup={"conflict_rules": list(rules)}
            )
            for name, dataset_cases in cases.items():
                group = hashlib.sha256()
                for case in dataset_cases:
                    request = case.request
                    packed = digest(pack_request(request, catalog, config, runtime, EVAL_TIME))
                    lines.append(f"{name} {budget} {'+'.join(rules)} {request.request_id} {packed}")
                    group.update(packed.encode("ascii"))
                print(name, budget, "+".join(rules), len(dataset_cases), group.hexdigest()[:16])
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, default=300, help="first N questions of each set")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--out", type=Path, required=True, help="digest lines, one a request")
    args = parser.parse_args(argv)
    try:
        with offline_cl100k_cache():
            lines = digests(args.data_dir, args.limit, args.budgets)
    except DataMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} digests to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
