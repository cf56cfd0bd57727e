"""Digests of our packing output on the evaluation sets: a change that must not change
prompts shows the same file before and after.

    python -m benchmarks.identity [--data-dir ../shared/data] [--limit 300]
        [--budgets 150 512 2048] [--wide 300 1000 3000] [--wide-requests 2] --out FILE

Packs, at each budget, with the default conflict rules (`copy` and `polarity`,
what users run) and with the `slot` rule on too:
- the first `--limit` questions of every dataset (`benchmarks.quality`);
- the same questions with one sentence of a gold passage negated, as a new
  document (`benchmarks.meaning.negation_case`): the sets hold few negations of
  their own, and these requests make the `polarity` rule find pairs;
- `--wide-requests` requests of each `--wide` size of the speed workload
  (`benchmarks.workload`: real paragraphs, hundreds to thousands of candidates a
  request), where the pair searches take their indexed paths (the evaluation
  sets have about ten candidates a request).
It writes one line per packed request: group, budget, rules, request id and the
SHA-256 of its prompt, manifest and exclusions as JSON. Run it on the old tree
(e.g. `git archive <commit> | tar -x -C DIR`, this file's `benchmarks/` copied
in, then `PYTHONPATH=DIR`) and on the new one, and `cmp` the two files; stdout
shows one digest per group, budget and rules, with the conflict groups each rule
found, to find where they differ and to see that the rules were exercised.
"""

import argparse
import hashlib
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmarks.adapters import DEFAULT_DATA_DIR, EVAL_TIME, DataMissingError, catalog_documents
from benchmarks.meaning import negation_case
from benchmarks.offline_tiktoken import offline_cl100k_cache
from benchmarks.quality import DATASETS
from benchmarks.workload import Pool, generate
from packer import Catalog, PackerRuntime, PackResult, pack_request
from schemas import DedupConfig, PackingConfig, Request

BUDGETS = (150, 512, 2048)
DEFAULT_RULES = tuple(DedupConfig().conflict_rules)
RULES = (DEFAULT_RULES, (*DEFAULT_RULES, "slot"))
WIDE = (300, 1000, 3000)

Group = tuple[str, Catalog, list[Request]]


def digest(result: PackResult) -> str:
    """SHA-256 of everything a packed request gives: prompt, manifest, exclusions."""
    parts = [result.prompt.model_dump_json(), result.manifest.model_dump_json()]
    parts += [x.model_dump_json() for x in result.exclusions]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def groups(
    data_dir: Path, limit: int, wide: Sequence[int], wide_requests: int, runtime: PackerRuntime
) -> list[Group]:
    """The request groups packed: every dataset, it negated, the wide workloads."""
    named: dict[str, list[Request]] = {}
    for name, dataset in DATASETS.items():
        cases = dataset.load(data_dir, limit)
        named[name] = [c.request for c in cases]
        edited = (
            negation_case(c.request, sorted(dataset.gold(c)), i, runtime)
            for i, c in enumerate(cases)
        )
        named[f"{name}+negated"] = [e[0] for e in edited if e is not None]
    catalog = Catalog(catalog_documents([r for rs in named.values() for r in rs]))
    out = [(name, catalog, requests) for name, requests in named.items()]
    if wide:
        pool = Pool.load(data_dir)
        pool_catalog = Catalog(pool.catalog())
        for size in wide:
            requests = list(generate(pool, wide_requests, size, seed=size))
            out.append((f"wide-{size}", pool_catalog, requests))
    return out


def digests(
    data_dir: Path, limit: int, budgets: Sequence[int], wide: Sequence[int], wide_requests: int
) -> list[str]:
    """One line per group, budget, rules and request; a summary line per group on stdout."""
    runtime = PackerRuntime.load()
    packed_groups = groups(data_dir, limit, wide, wide_requests, runtime)
    lines = []
    for budget in budgets:
        for rules in RULES:
            config = PackingConfig(
                max_evidence_tokens=budget, dedup={"conflict_rules": list(rules)}
            )
            for name, catalog, requests in packed_groups:
                group = hashlib.sha256()
                found: Counter[str] = Counter()
                for request in requests:
                    result = pack_request(request, catalog, config, runtime, EVAL_TIME)
                    packed = digest(result)
                    found.update(r for c in result.manifest.conflicts for r in c.rules)
                    lines.append(f"{name} {budget} {'+'.join(rules)} {request.request_id} {packed}")
                    group.update(packed.encode("ascii"))
                conflicts = " ".join(f"{rule}={n}" for rule, n in sorted(found.items()))
                print(
                    name, budget, "+".join(rules), len(requests), group.hexdigest()[:16], conflicts
                )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, default=300, help="first N questions of each set")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument(
        "--wide", type=int, nargs="*", default=list(WIDE), help="candidates a wide request"
    )
    parser.add_argument("--wide-requests", type=int, default=2, help="requests of each wide size")
    parser.add_argument("--out", type=Path, required=True, help="digest lines, one a request")
    args = parser.parse_args(argv)
    try:
        with offline_cl100k_cache():
            lines = digests(args.data_dir, args.limit, args.budgets, args.wide, args.wide_requests)
    except DataMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} digests to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
