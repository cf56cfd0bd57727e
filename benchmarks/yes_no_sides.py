"""Both sides of a debated yes/no question, each as one whole passage: ours, the naive loop
and the oracle on the fixture tests/data/yes_no_sides.json.

The fixture's passages argue a side mostly in their own words (few echo the
question), as web and news prose does; each is labelled yes, no or neither. A
case is one rank order of a question's passages at one budget; it counts when
a whole passage of each side reaches the model. Every rank order is too many
for six passages (720), so a fixed sample of `ORDERS` is read, spread evenly
over the permutations in their lexicographic order. The oracle packs the
shortest yes and the shortest no first (`OraclePacker`, our layout and
ledger); the naive loop takes the candidates in retrieval order until one does
not fit, charging each rendered block. Gap closed = (ours - naive) / (oracle -
naive), as the held-out yes/no set is scored.

`python -m benchmarks.yes_no_sides [--budgets ...] [--orders N] [--set name=value ...]
[--out FILE] [--no-write]`: writes `results/yes_no_sides.json` for the report (not with
`--set`: a variant's figures are printed only).
"""

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice, permutations
from math import factorial
from pathlib import Path
from typing import Any

from benchmarks.adapters import Paragraph, build_request, catalog_documents
from benchmarks.baselines import NaivePacker, OraclePacker, OurPacker, Packed
from benchmarks.quality import whole
from benchmarks.stamp import machine, stamp
from packer import Catalog, PackerRuntime
from packer.pack import layout_of
from schemas import PackingConfig, Request

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "data" / "yes_no_sides.json"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "yes_no_sides.json"
BUDGETS = (150, 200, 250, 300)
ORDERS = 24
"""Rank orders read per question (all of them when there are fewer)."""


@dataclass(frozen=True)
class Question:
    """A question, its passages' texts by id, and each passage's side."""

    question: str
    texts: dict[str, str]
    sides: dict[str, str]


def load(path: Path = FIXTURE) -> list[Question]:
    """The fixture's questions."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Question(
            q["question"],
            {p["id"]: p["text"] for p in q["passages"]},
            {p["id"]: p["side"] for p in q["passages"]},
        )
        for q in data["questions"]
    ]


def orders(ids: Sequence[str], count: int = ORDERS) -> list[tuple[str, ...]]:
    """`count` rank orders of `ids`, evenly spaced over all permutations (all if fewer)."""
    total = factorial(len(ids))
    step = max(1, total // count)
    return list(islice(permutations(ids), 0, total, step))[:count]


def as_request(question: Question, ranked: Sequence[str]) -> Request:
    """The passages in this rank order, each of its own document."""
    paragraphs = [
        Paragraph(key, None, question.texts[key], score=float(len(ranked) - k))
        for k, key in enumerate(ranked)
    ]
    return build_request("yes-no", question.question, paragraphs)


def both_sides(packed: Packed, question: Question) -> bool:
    """A whole passage of each side reached the model."""
    shown = {
        question.sides[key]
        for key in packed.kept
        if key in question.sides and whole(packed, key, question.texts)
    }
    return {"yes", "no"} <= shown


def shortest(question: Question, side: str, count: Any) -> str:
    """The id of the side's shortest passage in tokens."""
    ids = [k for k, s in question.sides.items() if s == side]
    return min(ids, key=lambda k: (count(question.texts[k]), k))


def measure(
    questions: Sequence[Question],
    budgets: Sequence[int] = BUDGETS,
    count_orders: int = ORDERS,
    **config: Any,
) -> dict[str, dict[int, float]]:
    """Share of cases with a whole passage of each side, per packer and budget."""
    runtime = PackerRuntime.load()
    count = runtime.tokens.count
    docs = Catalog(catalog_documents([as_request(q, list(q.texts)) for q in questions]))
    out: dict[str, dict[int, float]] = {"ours": {}, "naive": {}, "oracle": {}}
    for budget in budgets:
        ours = OurPacker(PackingConfig(max_evidence_tokens=budget, **config), docs, runtime)
        layout = layout_of(PackingConfig(), runtime, budget)
        naive = NaivePacker(budget, count, count_headers=True)
        hits = {"ours": 0, "naive": 0, "oracle": 0}
        cases = 0
        for q in questions:
            gold = frozenset(shortest(q, side, count) for side in ("yes", "no"))
            oracle = OraclePacker(budget, layout, gold)
            for ranked in orders(list(q.texts), count_orders):
                request = as_request(q, ranked)
                cases += 1
                for name, packer in (("ours", ours), ("naive", naive), ("oracle", oracle)):
                    hits[name] += both_sides(packer(request), q)
        for name in out:
            out[name][budget] = hits[name] / cases
    return out


def gap_closed(shares: dict[str, dict[int, float]], budget: int) -> float | None:
    """(ours - naive) / (oracle - naive) at this budget; None when the oracle gains nothing."""
    naive, oracle = shares["naive"][budget], shares["oracle"][budget]
    if oracle <= naive:
        return None
    return (shares["ours"][budget] - naive) / (oracle - naive)


def figures(shares: dict[str, dict[int, float]], budgets: Sequence[int]) -> list[dict[str, Any]]:
    """One row per budget: each packer's share of cases with a whole passage of each side,
    and the gap closed."""
    rows = []
    for budget in budgets:
        gap = gap_closed(shares, budget)
        rows.append(
            {
                "budget": budget,
                **{name: round(shares[name][budget], 3) for name in ("naive", "ours", "oracle")},
                "gap_closed": None if gap is None else round(gap, 2),
            }
        )
    return rows


def report_section(result: dict[str, Any]) -> list[str]:
    """The yes/no section of REPORT.md: the held-out yes/no measure on the fixture."""
    lines = [
        f"| {r['budget']} | {r['naive']} | {r['ours']} | {r['oracle']} | "
        f"{'-' if r['gap_closed'] is None else r['gap_closed']} |"
        for r in result["rows"]
    ]
    return [
        "### Both sides of a debated yes/no question, each whole (the held-out yes/no measure)",
        "",
        f"{stamp(result['machine'])} Reproduce: `python -m benchmarks.yes_no_sides` (part of",
        "`make eval`). Our own fixture (`tests/data/yes_no_sides.json`, "
        f"{result['questions']} questions, up to {result['orders']} rank orders each): it",
        "shows the mechanism works; the held-out set, real retrieval output, says whether",
        "it is right. Share of cases with a whole passage of each side:",
        "",
        "| budget | naive | ours | oracle | gap closed |",
        "|---|---|---|---|---|",
        *lines,
        "",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--orders", type=int, default=ORDERS, help="rank orders per question")
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="NAME=JSON", help="PackingConfig overrides"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--no-write", action="store_true", help="print only, write no file")
    args = parser.parse_args(argv)
    config = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    questions = load()
    rows = figures(measure(questions, args.budgets, args.orders, **config), args.budgets)
    print("budget  naive  ours  oracle  gap-closed")
    for r in rows:
        gap = "-" if r["gap_closed"] is None else f"{r['gap_closed']:.2f}"
        print(f"{r['budget']:6}  {r['naive']:.3f}  {r['ours']:.3f}  {r['oracle']:.3f}  {gap}")
    if not args.no_write and not config:
        result = {
            "machine": machine(),
            "questions": len(questions),
            "orders": args.orders,
            "rows": rows,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
