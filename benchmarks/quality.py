"""Packing quality on HotpotQA and RAMDocs: what right evidence reaches the model.

    python -m benchmarks.quality [--data-dir ../shared/data] [--limit N] [--out FILE]

Metrics per packer and evidence budget (tokens):
- HotpotQA: share of questions with both supporting paragraphs packed whole;
  share with a gold answer string in the packed text (yes/no questions left out);
- RAMDocs: share whose every gold answer is in the packed text; share with a
  misinformation document packed; share where the packer flagged a conflict
  involving a packed misinformation document;
- both: mean and max context tokens (our exact ledger; for the others, their
  context string counted with tiktoken), mean tokens of evidence text inside
  them (the rest is headers and markup), and the share of requests over budget.
Strings are compared after lowercasing and removing punctuation, articles and
extra whitespace (the SQuAD answer normalization).
"""

import argparse
import json
import string
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.adapters import (
    DEFAULT_DATA_DIR,
    DataMissingError,
    HotpotCase,
    RamCase,
    catalog_documents,
    hotpotqa_cases,
    ramdocs_cases,
)
from benchmarks.baselines import (
    HaystackLostInTheMiddle,
    LlamaIndexRepack,
    LlamaIndexTruncate,
    NaivePacker,
    OurPacker,
    Packed,
    Packer,
    tiktoken_counter,
)
from benchmarks.offline_tiktoken import offline_cl100k_cache
from benchmarks.stamp import machine
from packer import Catalog, TokenCounter
from schemas import PackingConfig

BUDGETS = (256, 512, 1024, 2048)
ORDER_POLICIES = ("relevance", "edges", "best_last", "chronological")
ABLATIONS = {
    "no-dedup": {"enable_dedup": False},
    "no-facets": {"enable_facet_coverage": False},
    "no-doc-cap": {"enable_document_cap": False},
}
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "quality.json"
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize(text: str) -> str:
    """SQuAD answer normalization: lowercase, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_PUNCT)
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


def contains(haystack: str, needle: str) -> bool:
    """Whether the normalized needle occurs in the normalized haystack on word boundaries."""
    needle = normalize(needle)
    return bool(needle) and f" {needle} " in f" {normalize(haystack)} "


def packed_text(packed: Packed) -> str:
    """The evidence text that reaches the model, joined."""
    return "\n".join(packed.kept.values())


def whole(packed: Packed, evidence_id: str, text: str) -> bool:
    """The passage reached the model entire (not cut to a prefix)."""
    shown = packed.kept.get(evidence_id)
    return shown is not None and shown.strip() == text.strip()


@dataclass(frozen=True)
class Row:
    """One line of the quality table."""

    dataset: str
    packer: str
    order_policy: str
    budget: int
    questions: int
    both_supporting: float | None
    answer_present: float | None
    all_gold_present: float | None
    misinfo_packed: float | None
    conflict_flagged_on_misinfo: float | None
    mean_tokens: float
    mean_text_tokens: float
    max_tokens: int
    over_budget: float


def _share(flags: Sequence[bool]) -> float | None:
    return round(100.0 * sum(flags) / len(flags), 1) if flags else None


def token_stats(packs: Sequence[Packed], budget: int, count: Callable[[str], int]) -> dict:
    """Context tokens used (the packer's ledger, or the context counted) and evidence text in it."""
    used = [p.tokens if p.tokens is not None else count(p.context) for p in packs]
    text = [sum(count(t) for t in p.kept.values()) for p in packs]
    return {
        "mean_tokens": round(sum(used) / len(used), 1),
        "mean_text_tokens": round(sum(text) / len(text), 1),
        "max_tokens": max(used),
        "over_budget": _share([u > budget for u in used]),
    }


def hotpot_row(
    name: str,
    policy: str,
    budget: int,
    cases: Sequence[HotpotCase],
    packer: Packer,
    count: Callable[[str], int],
) -> Row:
    """Run one packer over the HotpotQA cases and score it."""
    packs = [packer(case.request) for case in cases]
    both, answer = [], []
    for case, packed in zip(cases, packs, strict=True):
        texts = {c.evidence_id: c.text for c in case.request.candidates}
        both.append(all(whole(packed, e, texts[e]) for e in case.supporting))
        golds = [a for a in case.answers if normalize(a) not in {"yes", "no"}]
        if golds:
            answer.append(any(contains(packed_text(packed), a) for a in golds))
    return Row(
        dataset="hotpotqa",
        packer=name,
        order_policy=policy,
        budget=budget,
        questions=len(cases),
        both_supporting=_share(both),
        answer_present=_share(answer),
        all_gold_present=None,
        misinfo_packed=None,
        conflict_flagged_on_misinfo=None,
        **token_stats(packs, budget, count),
    )


def ramdocs_row(
    name: str,
    policy: str,
    budget: int,
    cases: Sequence[RamCase],
    packer: Packer,
    count: Callable[[str], int],
) -> Row:
    """Run one packer over the RAMDocs cases and score it."""
    packs = [packer(case.request) for case in cases]
    gold, misinfo, flagged = [], [], []
    for case, packed in zip(cases, packs, strict=True):
        text = packed_text(packed)
        gold.append(all(contains(text, a) for a in case.gold_answers))
        packed_misinfo = case.misinfo & packed.kept.keys()
        misinfo.append(bool(packed_misinfo))
        if packed_misinfo and packed.conflicts is not None:
            flagged.append(any(group & packed_misinfo for group in packed.conflicts))
    return Row(
        dataset="ramdocs",
        packer=name,
        order_policy=policy,
        budget=budget,
        questions=len(cases),
        both_supporting=None,
        answer_present=None,
        all_gold_present=_share(gold),
        misinfo_packed=_share(misinfo),
        conflict_flagged_on_misinfo=_share(flagged),
        **token_stats(packs, budget, count),
    )


def packers_for(
    budget: int, catalog: Catalog, tokens: TokenCounter
) -> Iterable[tuple[str, str, Packer]]:
    """(name, order policy, packer) for every packer compared at this budget."""
    for policy in ORDER_POLICIES:
        config = PackingConfig(max_evidence_tokens=budget, order_policy=policy)
        yield "ours", policy, OurPacker(config, catalog, tokens)
    for name, switches in ABLATIONS.items():
        config = PackingConfig(max_evidence_tokens=budget, **switches)
        yield f"ours {name}", "relevance", OurPacker(config, catalog, tokens)
    count = tiktoken_counter(tokens.encoding)
    yield "naive", "score", NaivePacker(budget, count)
    yield "naive-exact", "score", NaivePacker(budget, count, count_headers=True)
    yield "llamaindex-truncate", "score", LlamaIndexTruncate(budget)
    yield "llamaindex-repack", "score", LlamaIndexRepack(budget)
    yield "haystack-litm", "edges", HaystackLostInTheMiddle(budget)


def evaluate(data_dir: Path, limit: int | None, budgets: Sequence[int]) -> list[Row]:
    """Every packer at every budget on both datasets."""
    hotpot = hotpotqa_cases(data_dir, limit)
    ram = ramdocs_cases(data_dir, limit)
    catalog = Catalog(catalog_documents([c.request for c in hotpot] + [c.request for c in ram]))
    tokens = TokenCounter.load()
    count = tokens.count
    rows = []
    with offline_cl100k_cache():
        for budget in budgets:
            for name, policy, packer in packers_for(budget, catalog, tokens):
                rows.append(hotpot_row(name, policy, budget, hotpot, packer, count))
                rows.append(ramdocs_row(name, policy, budget, ram, packer, count))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="holds hotpotqa/ and ramdocs/"
    )
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each set")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)
    try:
        rows = evaluate(args.data_dir, args.limit, args.budgets)
    except DataMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results = {"machine": machine(), "rows": [asdict(r) for r in rows]}
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    for r in rows:
        if r.dataset == "hotpotqa":
            print(
                f"{r.budget:5d} {r.packer:24s} {r.order_policy:13s} both={r.both_supporting} "
                f"answer={r.answer_present} tokens={r.mean_tokens} over={r.over_budget}"
            )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
