"""Verification of answers: recall per fault class, false flags, and speed.

    python -m benchmarks.verification --data-dir ../shared/data [--limit 500]

Answer sets are built from the eval data, packed by our packer (1,024
evidence tokens): a correct answer per request cites, for each packed gold
passage (HotpotQA supporting paragraphs, RAMDocs correct documents,
MultiHop-RAG evidence facts; the first block when none is packed), its first
sentence and its first sentence stating a figure or date, taken verbatim;
both sides of each flagged conflict (a sentence of each, and a statement of
the conflict citing any side no sentence could be taken from); a
declaration for each uncovered facet; an abstention for an empty packet.
Each correct answer is then mutated once per fault class that applies to it:

- `unknown_label`: one citation names a label one past the last;
- `changed_figure` / `changed_date`: a cited number (or date) is replaced by
  one no cited block holds (number + 1, date + 1 day, as written);
- `uncited_factual`: the citations of a sentence stating a figure are removed;
- `conflict_side_dropped`: every sentence citing one side of a conflict goes;
- `uncovered_answered`: an uncovered facet's declaration becomes a cited claim;
- `leaked_id`: the evidence id of another request's passage is mentioned.

Recall of a class is the share of its mutants failing the check meant to
catch it; the false-flag rate is the share of correct answers failing any
check. Speed: `verify_answer` over every answer in one process (one core),
repeated, after a warm-up; text facts are memoized per block as in a run.
"""

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks.adapters import (
    DEFAULT_DATA_DIR,
    EVAL_TIME,
    catalog_documents,
    hotpotqa_cases,
    multihop_cases,
    ramdocs_cases,
)
from packer import Catalog, PackerRuntime, pack_request
from packer.answers import parse_prompt_line
from packer.claims import cited_labels, parse_answer, split_sentences
from packer.formats import format_line
from packer.verify import Packet, verify_answer
from schemas import PackingConfig, Request

DEFAULT_RESULTS = Path(__file__).resolve().parent / "results"
EVIDENCE_BUDGET = 1024
CLASSES: dict[str, str] = {
    "unknown_label": "labels_exist",
    "changed_figure": "figures_supported",
    "changed_date": "figures_supported",
    "uncited_factual": "factual_sentences_cited",
    "conflict_side_dropped": "conflicts_reported",
    "uncovered_answered": "uncovered_facets_declared",
    "leaked_id": "no_leaked_ids",
}
"""Each fault class and the check that must catch it."""
TARGET_RECALL = 0.99
TARGET_FALSE_FLAGS = 0.01
TARGET_ANSWERS_PER_S = 1_000


@dataclass(frozen=True)
class Case:
    """One packed request: its packet, and the evidence ids that are gold."""

    dataset: str
    packet: Packet
    gold_labels: tuple[str, ...]
    label_of: dict[str, str]


def _cases(data_dir: Path, limit: int | None) -> Iterator[tuple[str, Request, frozenset[str]]]:
    for c in hotpotqa_cases(data_dir, limit):
        yield "hotpotqa", c.request, c.supporting
    for r in ramdocs_cases(data_dir, limit):
        yield "ramdocs", r.request, r.correct
    for m in multihop_cases(data_dir, limit):
        yield "multihop_rag", m.request, m.evidence


def packed_cases(data_dir: Path, limit: int | None) -> tuple[list[Case], frozenset[str]]:
    """Every request packed, as packets; and the run's evidence and document ids."""
    raw = list(_cases(data_dir, limit))
    catalog = Catalog(catalog_documents([r for _, r, _ in raw]))
    config = PackingConfig(max_evidence_tokens=EVIDENCE_BUDGET)
    runtime = PackerRuntime.load()
    cases, run_ids = [], set()
    for dataset, request, gold in raw:
        result = pack_request(request, catalog, config, runtime, EVAL_TIME)
        manifest = result.manifest
        blocks = parse_prompt_line(format_line(result.prompt, 0, "messages")).blocks
        own = {e.evidence_id for e in manifest.evidence} | {
            e.document_id for e in manifest.evidence
        }
        run_ids |= {c.evidence_id for c in request.candidates}
        run_ids |= {c.document_id for c in request.candidates if c.document_id}
        packet = Packet(
            request_id=request.request_id,
            blocks=blocks,
            conflicts=tuple(tuple(c.labels) for c in manifest.conflicts if len(c.labels) >= 2),
            uncovered=tuple(manifest.uncovered_facets),
            own_ids=frozenset(own),
        )
        label_of = {e.evidence_id: e.label for e in manifest.evidence}
        gold_labels = tuple(label_of[e] for e in sorted(gold) if e in label_of)
        cases.append(Case(dataset, packet, gold_labels, label_of))
    return cases, frozenset(run_ids)


def _claims(text: str, label: str) -> list[str]:
    """The block's first sentence, and its first sentence with a figure or date, cited.

    Only sentences as a writer would start them (a capital or a digit), and
    without brackets of their own, are taken: passages scraped from the web
    hold fragments ("] Demographics [ edit ]") no answer would repeat.
    """
    sentences = [
        s
        for s in split_sentences(text)
        if len(s) > 3 and (s[0].isupper() or s[0].isdigit()) and not re.search(r"[\[\]]", s)
    ]
    if not sentences:
        return []
    chosen = [sentences[0]]
    factual = next((s for s in sentences if parse_answer(s)[0].facts), None)
    if factual is not None and factual != sentences[0]:
        chosen.append(factual)
    return [f"{s.rstrip(' .')} [{label}]." for s in chosen]


def correct_answer(case: Case) -> list[str]:
    """The sentences of a correct answer, each citing the block it was taken from."""
    packet = case.packet
    if not packet.blocks:
        return ["The sources do not contain the answer."]
    sides = [label for group in packet.conflicts for label in group]
    labels = list(dict.fromkeys([*(case.gold_labels or (min(packet.blocks),)), *sides]))
    sentences = [s for label in labels for s in _claims(packet.blocks[label], label)]
    if packet.conflicts:
        cited = " ".join(sentences)
        sides = ", ".join(label for label in dict.fromkeys(sides) if f"[{label}]" not in cited)
        sentences.append(
            f"The sources conflict on this point [{sides}]."
            if sides
            else "The sources conflict on this point."
        )
    sentences += [f"The sources do not cover {facet}." for facet in packet.uncovered]
    return sentences


_LABEL = re.compile(r"\[E(\d+)\]")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?![\w.,]*\d)")
_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July",
    "August", "September", "October", "November", "December",
]  # fmt: skip
_MONTH = "(" + "|".join(_MONTHS) + ")"
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DMY = re.compile(rf"\b(\d{{1,2}}) {_MONTH} (\d{{4}})\b")
_MDY = re.compile(rf"\b{_MONTH} (\d{{1,2}}), (\d{{4}})\b")
_DATES: tuple[
    tuple[re.Pattern[str], Callable[[re.Match[str]], date], Callable[[date], str]], ...
] = (
    (_ISO, lambda m: date(int(m[1]), int(m[2]), int(m[3])), date.isoformat),
    (
        _DMY,
        lambda m: date(int(m[3]), _MONTHS.index(m[2]) + 1, int(m[1])),
        lambda d: f"{d.day} {_MONTHS[d.month - 1]} {d.year}",
    ),
    (
        _MDY,
        lambda m: date(int(m[3]), _MONTHS.index(m[1]) + 1, int(m[2])),
        lambda d: f"{_MONTHS[d.month - 1]} {d.day}, {d.year}",
    ),
)
"""Full dates as the passages write them: how to read one, and to write it the same way."""


def _changed_date(sentence: str) -> str | None:
    """The sentence with its first full date one day later, written the same way."""
    for pattern, read, write in _DATES:
        match = pattern.search(sentence)
        if match is None:
            continue
        try:
            later = read(match) + timedelta(days=1)
        except ValueError:
            return None
        return sentence[: match.start()] + write(later) + sentence[match.end() :]
    return None


def _cited_blocks(sentence: str, packet: Packet) -> list[str]:
    return [packet.blocks[f"E{n}"] for n in _LABEL.findall(sentence) if f"E{n}" in packet.blocks]


def _changed_figure(sentence: str, packet: Packet) -> str | None:
    """The sentence with a plain number (not in a date) raised until no cited block holds it."""
    body = _LABEL.sub("", sentence)
    if any(pattern.search(body) for pattern, _, _ in _DATES):
        return None
    match = _NUMBER.search(body)
    if match is None:
        return None
    cited = " ".join(_cited_blocks(sentence, packet))
    value = int(match[0]) + 1
    while re.search(rf"(?<![\d,.]){value}(?![\d])", cited.replace(",", "")):
        value += 1
    return sentence[: match.start()] + str(value) + sentence[match.end() :]


def _replaced(sentences: list[str], i: int, new: str) -> list[str]:
    return [*sentences[:i], new, *sentences[i + 1 :]]


def mutants(case: Case, sentences: list[str], other_id: str) -> Iterator[tuple[str, list[str]]]:
    """Each fault class that applies, as (class, mutated sentences)."""
    packet = case.packet
    cited = [i for i, s in enumerate(sentences) if _LABEL.search(s)]
    if cited:
        i = cited[0]
        unknown = f"[E{len(packet.blocks) + 1}]"
        yield (
            "unknown_label",
            [*sentences[:i], _LABEL.sub(unknown, sentences[i], 1), *sentences[i + 1 :]],
        )
    for kind, change in (
        ("changed_date", _changed_date),
        ("changed_figure", lambda s: _changed_figure(s, packet)),
    ):
        for i in cited:
            changed = change(sentences[i])
            if changed is not None and changed != sentences[i]:
                yield kind, _replaced(sentences, i, changed)
                break
    factual = [i for i in cited if parse_answer(sentences[i])[0].facts]
    if factual:
        i = factual[0]
        stripped = _LABEL.sub("", sentences[i]).replace(" .", ".")
        yield "uncited_factual", _replaced(sentences, i, stripped)
    if packet.conflicts:
        side = packet.conflicts[0][-1]
        kept = [s for s in sentences if side not in cited_labels(s)]
        yield "conflict_side_dropped", kept
    if packet.uncovered and packet.blocks:
        facet = packet.uncovered[0]
        claim = next(s for s in sentences if _LABEL.search(s))
        answered = [
            f"As for {facet}, {claim[0].lower()}{claim[1:]}" if s.endswith(f"cover {facet}.") else s
            for s in sentences
        ]
        yield "uncovered_answered", answered
    yield "leaked_id", [*sentences, f"See also {other_id}."]


def build_answers(cases: Sequence[Case], run_ids: frozenset[str]) -> list[dict[str, Any]]:
    """Correct answers and their mutants, each with the class it belongs to."""
    answers = []
    ids = sorted(run_ids)
    for n, case in enumerate(cases):
        sentences = correct_answer(case)
        answers.append({"case": n, "class": "correct", "text": " ".join(sentences)})
        other = next(i for i in ids[(n * 7919) % len(ids) :] + ids if i not in case.packet.own_ids)
        for kind, mutated in mutants(case, sentences, other):
            answers.append({"case": n, "class": kind, "text": " ".join(mutated)})
    return answers


def measure(cases: Sequence[Case], run_ids: frozenset[str], repeats: int) -> dict[str, Any]:
    """Recall per class, false flags on correct answers, and answers verified per second."""
    answers = build_answers(cases, run_ids)
    caught: dict[str, list[bool]] = defaultdict(list)
    false_flags: dict[str, int] = defaultdict(int)
    missed: dict[str, list[str]] = defaultdict(list)
    for a in answers:
        verdict = verify_answer(a["text"], cases[a["case"]].packet, run_ids)
        if a["class"] == "correct":
            caught["correct"].append(not verdict.passed)
            for name in verdict.failed:
                false_flags[name] += 1
            if not verdict.passed and len(missed["correct"]) < 5:
                missed["correct"].append(a["text"][:300])
            continue
        hit = CLASSES[a["class"]] in verdict.failed
        caught[a["class"]].append(hit)
        if not hit and len(missed[a["class"]]) < 5:
            missed[a["class"]].append(a["text"][:300])
    started = time.perf_counter()
    for _ in range(repeats):
        for a in answers:
            verify_answer(a["text"], cases[a["case"]].packet, run_ids)
    elapsed = time.perf_counter() - started
    correct = caught.pop("correct")
    return {
        "requests": len(cases),
        "answers": len(answers),
        "recall": {k: {"n": len(v), "recall": sum(v) / len(v)} for k, v in sorted(caught.items())},
        "correct_answers": len(correct),
        "false_flag_rate": sum(correct) / len(correct),
        "false_flags_by_check": dict(sorted(false_flags.items())),
        "answers_per_s": repeats * len(answers) / elapsed,
        "examples_missed": {k: v for k, v in missed.items() if v},
        "targets": {
            "recall": TARGET_RECALL,
            "false_flag_rate": TARGET_FALSE_FLAGS,
            "answers_per_s": TARGET_ANSWERS_PER_S,
        },
    }


def summary(result: dict[str, Any]) -> str:
    lines = [f"verification: {result['requests']} requests, {result['answers']} answers"]
    for name, r in result["recall"].items():
        lines.append(f"  recall {name:<22} {r['recall']:.4f} (n={r['n']})")
    lines.append(
        f"  false flags on {result['correct_answers']} correct answers: "
        f"{result['false_flag_rate']:.4f} {result['false_flags_by_check']}"
    )
    lines.append(f"  throughput {result['answers_per_s']:,.0f} answers/s (one process)")
    return "\n".join(lines)


def report_section(result: dict[str, Any]) -> list[str]:
    """The verification section of REPORT.md."""
    targets = result["targets"]
    rows = [
        f"| `{name}` | `{CLASSES[name]}` | {r['n']} | {r['recall']:.4f} | "
        f"{'met' if r['recall'] >= targets['recall'] else 'missed'} |"
        for name, r in result["recall"].items()
    ]
    flags = result["false_flag_rate"]
    speed = result["answers_per_s"]
    return [
        "## Verification of answers",
        "",
        f"{result['requests']:,} requests packed, {result['answers']:,} answers "
        f"({result['correct_answers']:,} correct, the rest one fault each). "
        "Reproduce: `make eval` (or `python -m benchmarks.verification`).",
        "",
        f"| fault class | check | answers | recall | target >= {targets['recall']} |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"False flags on correct answers: {flags:.4f} (target <= {targets['false_flag_rate']}; "
        f"by check: {result['false_flags_by_check'] or 'none'}). Throughput: "
        f"{speed:,.0f} answers/s in one process (target >= {targets['answers_per_s']:,} per core).",
        "",
        __doc__.split("\n\n", 2)[2].strip(),
        "",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, default=None, help="records per data set")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    args = parser.parse_args(argv)
    cases, run_ids = packed_cases(args.data_dir, args.limit)
    result = measure(cases, run_ids, args.repeats)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "verification.json").write_text(json.dumps(result, indent=1) + "\n")
    print(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
