"""Packing quality on four public QA sets: what right evidence reaches the model.

    python -m benchmarks.quality [--data-dir ../shared/data] [--datasets NAME...]
        [--packers NAME...] [--budgets N...] [--limit N] [--no-write] [--out FILE]

Datasets and packers are chosen by name or name prefix (an exact name wins:
`ours` is ours with defaults, `ours-` every ablation, `ours:` every order
policy, `naive` the seed loop, `naive-` its variants). Stdout shows one table
per dataset (packers x budgets, cells = primary metric / % over budget) and
the targets; `--no-write` leaves the results file alone.

Metrics per packer and evidence budget (tokens); "packed whole" means a block
shows the passage's whole text (whitespace aside), "kept" that some part of
it, or a copy it was folded into, was shown; shares are % of requests:
- HotpotQA (and `hotpotqa-notitle`): primary = both supporting paragraphs
  packed whole; a gold answer string in the packed text (yes/no left out);
- RAMDocs: primary = every gold answer in the packed text; a misinformation
  document kept; of those, a flagged conflict involving a kept misinformation
  document (packers that do not flag: none);
- MultiHop-RAG: primary = every evidence fact packed whole, over the non-null
  queries; a passage holding the answer packed whole, over the inference queries
  (their answer is a name) whose answer a candidate holds (`answer_passage`, the
  held-out news QA set's measure; `oracle-answer` packs those passages first);
  mean tokens spent on the null queries (no evidence exists); `multihop_rag-50`
  the same queries with 50 candidates each from the pool of facts
  (`adapters.widened`), the evidence ranked among tens of look-alikes;
- `multihop_rag-conflict` (`benchmarks.counterfactual`): the answerable
  `multihop_rag-50` queries with a counterfactual copy of one evidence fact
  (one number, date, name or negation changed); primary = both the true fact
  and the copy kept (whole, or a shown part holding the changed words); both
  kept and flagged in one shown conflict group;
- ConflictNQ: the real passage packed whole; kept; its short answer in the
  packed text (over the questions whose real passage contains it verbatim,
  65 of 451: the others' short answers are paraphrases); primary = both
  sides kept (the real passage and at least one fake: the set's "both sides"
  metric, which every packer can score); both
  sides kept and flagged (a conflict group the packer flagged among the shown
  passages holds the real passage and a fake; packers that do not flag score 0);
- every set: `partial_answer`, of the blocks showing part of a passage whose
  whole text holds a gold answer string (HotpotQA's, RAMDocs' gold answers,
  ConflictNQ's real short answer; MultiHop-RAG's facts are single sentences),
  the share that show it; `conflict_silent`, requests where a flagged
  conflict group has a member shown and another neither shown nor named as
  left out (`conflict_side_over_budget`: the prompt notes it), for packers
  that flag; `mid_sentence_cut`, requests where some block shows less than
  its passage and does not end at a sentence end of the original; mean and
  max context tokens (our exact ledger; for the others, their context string
  counted with tiktoken), mean tokens of evidence text inside them (the rest
  is headers and markup), blocks per prompt, the share of prompts with no
  evidence at all, the share of requests over budget, and (ours) left-out
  candidates per request by reason;
- conflict detection, on the labelled sets (RAMDocs misinfo against correct,
  ConflictNQ fakes against the real passage), from every conflict group our
  manifest lists (all gated candidates, packed or not): a flagged pair (two
  members of one group) is true when one side is misinfo/fake and the other
  correct/real; precision = true pairs / flagged pairs, micro over requests;
  recall = share of misinfo/fake passages in a group with a correct/real one.
Strings are compared after lowercasing and removing punctuation, articles and
extra whitespace (the SQuAD answer normalization).
"""

import argparse
import json
import re
import string
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from pathlib import Path
from typing import Any, Protocol

from benchmarks import targets
from benchmarks.adapters import (
    DEFAULT_DATA_DIR,
    ConflictCase,
    DataMissingError,
    HotpotCase,
    MultihopCase,
    RamCase,
    catalog_documents,
    conflict_nq_cases,
    hotpotqa_cases,
    multihop_cases,
    ramdocs_cases,
)
from benchmarks.baselines import (
    HaystackLostInTheMiddle,
    LlamaIndexRepack,
    LlamaIndexTruncate,
    NaivePacker,
    OraclePacker,
    OurPacker,
    Packed,
    Packer,
    our_format_block,
    tiktoken_counter,
)
from benchmarks.counterfactual import NewsConflictCase, news_conflict_cases
from benchmarks.label_problems import LABEL_PROBLEMS
from benchmarks.offline_tiktoken import offline_cl100k_cache
from benchmarks.stamp import machine
from packer import Catalog, PackerRuntime
from packer.pack import layout_of
from schemas import DedupConfig, PackingConfig, Request, UtilityWeights

BUDGETS = (150, 256, 512, 1024, 2048)
WIDE_CANDIDATES = 50
"""Candidates a request of `multihop_rag-50` holds: the held-out news QA shape, about 50
retrieved facts with the evidence ranked below what fits (`adapters.widened`)."""
ORDER_POLICIES = ("relevance", "edges", "best_last", "chronological")
# One line per switch: name -> PackingConfig fields it overrides.
DEDUP_LEVELS = DedupConfig().levels
ABLATIONS: dict[str, dict[str, Any]] = {
    "no-dedup": {"enable_dedup": False},
    "no-facets": {"enable_facet_coverage": False},
    "no-doc-cap": {"enable_document_cap": False},
    "no-units": {"enable_sentence_units": False},
    "no-subject-links": {"enable_subject_links": False},
    "no-source-links": {"enable_source_links": False},
    "no-claim-units": {"enable_claim_units": False},
    "no-conflict-sides": {"enable_conflict_sides": False},
    "no-calibrated-relevance": {"enable_calibrated_relevance": False},
    "no-term-stems": {"enable_term_stems": False},  # whole question words: packer.question
    "no-pairs-first": {"enable_pairs_first": False},
    "no-sides": {"enable_sides_first": False},  # a yes/no question's two sides: packer.first
    "answers-first": {"enable_answers_first": True},  # opt-in: packer.first
    "no-full-names": {"enable_full_names": False},  # the answer's name in full: packer.first
    "no-block-overhead": {"weights": {"block_overhead": 0.0}},  # per bare token
    "no-shared-names": {"weights": {"shared_name": 0.0}},  # packer.sources
    "no-polarity": {"dedup": {"conflict_rules": ("copy", "amount")}},
    "no-amount": {"dedup": {"conflict_rules": ("copy", "polarity")}},
    "no-compact-framing": {"compact_framing_below": 0},
    **{f"dedup-no-{level}": {"dedup": {"levels": tuple(x for x in DEDUP_LEVELS if x != level)}}
       for level in DEDUP_LEVELS},
    **{f"zero-{term}": {"weights": {term: 0.0}} for term in UtilityWeights.model_fields
       if term not in ("block_overhead", "shared_name")},  # `no-block-overhead`, `no-shared-names`
    # block layouts: the default shows the label only; a six-word title, a full one, the ids
    "blocks-short-title": {"block_attributes": ("title",)},
    "blocks-full-title": {"block_attributes": ("title",), "title_words": 256},
    "blocks-with-ids": {"block_attributes": ("title", "document", "revision", "section"),
                        "title_words": 256},
}  # fmt: skip
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "quality.json"
_PUNCT = str.maketrans("", "", string.punctuation)
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


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
    return "\n".join(packed.shown.values())


def _same(shown: str, text: str) -> bool:
    return shown.split() == text.split()


def whole(packed: Packed, evidence_id: str, texts: dict[str, str]) -> bool:
    """The passage reached the model entire: its block (or the one it was folded into)
    shows that block's whole passage."""
    block = packed.block_of(evidence_id)
    return block is not None and _same(packed.shown[block], texts[block])


def ends_at_sentence(shown: str, text: str) -> bool:
    """The shown part ends where a sentence of the original ends (or is the whole)."""
    shown = shown.strip()
    if _same(shown, text):
        return True
    start = text.find(shown)
    if start < 0:  # re-spaced or re-written: judge the shown text alone
        return bool(_SENTENCE_END.search(shown))
    end = start + len(shown)
    return bool(_SENTENCE_END.search(text[:end])) and (end == len(text) or text[end].isspace())


def mid_sentence_cut(packed: Packed, texts: dict[str, str]) -> bool:
    """Some block shows part of its passage, cut inside a sentence."""
    return any(not ends_at_sentence(s, texts[e]) for e, s in packed.shown.items())


def partial_answers(packed: Packed, texts: dict[str, str], answers: Sequence[str]) -> list[bool]:
    """For each block that shows part of a passage holding an answer: does the part?"""
    return [
        any(contains(shown, a) for a in answers)
        for e, shown in packed.shown.items()
        if not _same(shown, texts[e]) and any(contains(texts[e], a) for a in answers)
    ]


def silent_side(packed: Packed) -> bool:
    """A flagged conflict group with a member shown and another left out unannounced."""
    noted = packed.noted_missing or frozenset()
    kept = packed.kept
    return any(
        group & kept and any(e not in kept and e not in noted for e in group)
        for group in packed.conflict_groups or ()
    )


def _share(flags: Sequence[bool]) -> float | None:
    return round(100.0 * sum(flags) / len(flags), 1) if flags else None


class Case(Protocol):
    request: Request


def _texts(case: Case) -> dict[str, str]:
    return {c.evidence_id: c.text for c in case.request.candidates}


Metrics = dict[str, float | None]
Scorer = Callable[[Sequence[Any], Sequence[Packed], Sequence[int]], Metrics]
Sides = Callable[[Any], tuple[frozenset[str], frozenset[str]]]


def hotpot_metrics(
    cases: Sequence[HotpotCase], packs: Sequence[Packed], used: Sequence[int]
) -> Metrics:
    both, answer = [], []
    for case, packed in zip(cases, packs, strict=True):
        texts = _texts(case)
        both.append(all(whole(packed, e, texts) for e in case.supporting))
        golds = [a for a in case.answers if normalize(a) not in {"yes", "no"}]
        if golds:
            answer.append(any(contains(packed_text(packed), a) for a in golds))
    return {"both_supporting": _share(both), "answer_present": _share(answer)}


def ramdocs_metrics(
    cases: Sequence[RamCase], packs: Sequence[Packed], used: Sequence[int]
) -> Metrics:
    gold, misinfo, flagged = [], [], []
    for case, packed in zip(cases, packs, strict=True):
        text = packed_text(packed)
        gold.append(all(contains(text, a) for a in case.gold_answers))
        packed_misinfo = case.misinfo & packed.kept
        misinfo.append(bool(packed_misinfo))
        if packed_misinfo and packed.conflicts is not None:
            flagged.append(any(group & packed_misinfo for group in packed.conflicts))
    return {
        "all_gold_present": _share(gold),
        "misinfo_packed": _share(misinfo),
        "conflict_flagged_on_misinfo": _share(flagged),
    }


def multihop_metrics(
    cases: Sequence[MultihopCase], packs: Sequence[Packed], used: Sequence[int]
) -> Metrics:
    found, answered, null_tokens = [], [], []
    for case, packed, n in zip(cases, packs, used, strict=True):
        if case.null_query:
            null_tokens.append(n)
            continue
        texts = _texts(case)
        found.append(all(whole(packed, e, texts) for e in case.evidence))
        holding = answer_passages(case)
        if holding:
            answered.append(any(whole(packed, e, texts) for e in holding))
    mean_null = round(sum(null_tokens) / len(null_tokens), 1) if null_tokens else None
    return {
        "all_evidence": _share(found),
        "answer_passage": _share(answered),
        "null_mean_tokens": mean_null,
    }


def answer_passages(case: MultihopCase) -> list[str]:
    """The candidates holding an inference query's answer, a name ("Which company ...?":
    "Google"): the held-out news QA set scores a request by whether one of them is
    packed whole. The other queries' answers are judgements ("Yes", "Consistent"),
    which a passage holds only by chance."""
    if not case.inference:
        return []
    return [c.evidence_id for c in case.request.candidates if contains(c.text, case.answer)]


def conflict_nq_metrics(
    cases: Sequence[ConflictCase], packs: Sequence[Packed], used: Sequence[int]
) -> Metrics:
    real_whole, real_kept, answer, both, flagged = [], [], [], [], []
    for case, packed in zip(cases, packs, strict=True):
        kept = packed.kept
        sides = case.real in kept and bool(case.fakes & kept)
        real_whole.append(whole(packed, case.real, _texts(case)))
        real_kept.append(case.real in kept)
        if contains(_texts(case)[case.real], case.real_short_answer):
            answer.append(contains(packed_text(packed), case.real_short_answer))
        both.append(sides)
        flagged.append(
            sides and any(case.real in g and bool(case.fakes & g) for g in packed.conflicts or ())
        )
    return {
        "real_whole": _share(real_whole),
        "real_kept": _share(real_kept),
        "real_answer_present": _share(answer),
        "both_kept": _share(both),
        "both_kept_flagged": _share(flagged),
    }


def fact_kept(packed: Packed, evidence_id: str, texts: dict[str, str], words: str) -> bool:
    """The passage reached the model whole, or its shown part holds these words."""
    block = packed.block_of(evidence_id)
    return whole(packed, evidence_id, texts) or (
        block is not None and contains(packed.shown[block], words)
    )


def news_conflict_metrics(
    cases: Sequence[NewsConflictCase], packs: Sequence[Packed], used: Sequence[int]
) -> Metrics:
    """Both sides of the one changed fact kept (`counterfactual`), and flagged together."""
    true, copy, both, flagged = [], [], [], []
    for case, packed in zip(cases, packs, strict=True):
        texts = _texts(case)
        sides = (
            fact_kept(packed, case.true, texts, case.changed[0]),
            fact_kept(packed, case.counterfactual, texts, case.changed[1]),
        )
        true.append(sides[0])
        copy.append(sides[1])
        both.append(all(sides))
        pair = {case.true, case.counterfactual}
        flagged.append(all(sides) and any(pair <= g for g in packed.conflicts or ()))
    return {
        "pair_kept": _share(both),
        "pair_kept_flagged": _share(flagged),
        "true_kept": _share(true),
        "counterfactual_kept": _share(copy),
    }


def detection_counts(
    groups: Iterable[frozenset[str]], wrong: frozenset[str], right: frozenset[str]
) -> tuple[int, int, int]:
    """(flagged pairs, true pairs, wrong passages grouped with a right one) of one request."""
    pairs = true = 0
    found: set[str] = set()
    for group in groups:
        for a, b in combinations(sorted(group), 2):
            pairs += 1
            true += (a in wrong and b in right) or (a in right and b in wrong)
        if group & right:
            found |= group & wrong
    return pairs, true, len(found)


def set_apart(groups: Iterable[frozenset[str]]) -> int:
    """How many of the flagged pairs are documented label problems (`label_problems`)."""
    return sum(
        frozenset(pair) in LABEL_PROBLEMS for g in groups for pair in combinations(sorted(g), 2)
    )


def detection_metrics(cases: Sequence[Any], packs: Sequence[Packed], sides: Sides) -> Metrics:
    """Conflict precision and recall against the labels (micro over requests), and the
    precision with the documented label problems set apart (`label_problems`)."""
    pairs = true = found = wrong_total = apart = 0
    for case, packed in zip(cases, packs, strict=True):
        wrong, right = sides(case)
        p, t, f = detection_counts(packed.conflict_groups or (), wrong, right)
        pairs, true, found, wrong_total = pairs + p, true + t, found + f, wrong_total + len(wrong)
        apart += set_apart(packed.conflict_groups or ())
    judged = pairs - apart
    return {
        "conflict_pairs": pairs,
        "conflict_precision": round(true / pairs, 3) if pairs else None,
        "conflict_recall": round(found / wrong_total, 3) if wrong_total else None,
        "conflict_pairs_set_apart": apart,
        "conflict_precision_labels_apart": round(true / judged, 3) if judged else None,
    }


def _spans(answers: Sequence[str]) -> tuple[str, ...]:
    """Answer strings a passage can hold (yes/no are not)."""
    return tuple(a for a in answers if normalize(a) not in {"yes", "no"})


@dataclass(frozen=True)
class Dataset:
    """One evaluation set: how to load it, score packs, and what its headline metric is.

    `gold` gives a case's gold passages (what the oracle packs first); `sides`
    its (wrong, right) passages when the set labels conflicts; `answer_gold` the
    passages holding its short answer, where the set scores them
    (`answer_passage`: what `oracle-answer` packs first).
    """

    load: Callable[[Path, int | None], Sequence[Any]]
    score: Scorer
    primary: str
    gold: Callable[[Any], frozenset[str]]
    sides: Sides | None = None
    answers: Callable[[Any], Sequence[str]] = lambda case: ()
    answer_gold: Callable[[Any], frozenset[str]] | None = None


DATASETS: dict[str, Dataset] = {
    "hotpotqa": Dataset(
        hotpotqa_cases,
        hotpot_metrics,
        "both_supporting",
        lambda c: c.supporting,
        answers=lambda c: _spans(c.answers),
    ),
    "hotpotqa-notitle": Dataset(
        partial(hotpotqa_cases, titles=False),
        hotpot_metrics,
        "both_supporting",
        lambda c: c.supporting,
        answers=lambda c: _spans(c.answers),
    ),
    "ramdocs": Dataset(
        ramdocs_cases,
        ramdocs_metrics,
        "all_gold_present",
        lambda c: c.correct,
        sides=lambda c: (c.misinfo, c.correct),
        answers=lambda c: c.gold_answers,
    ),
    "multihop_rag": Dataset(
        multihop_cases,
        multihop_metrics,
        "all_evidence",
        lambda c: c.evidence,
        answer_gold=lambda c: frozenset(answer_passages(c)),
    ),
    "multihop_rag-50": Dataset(
        partial(multihop_cases, candidates=WIDE_CANDIDATES),
        multihop_metrics,
        "all_evidence",
        lambda c: c.evidence,
        answer_gold=lambda c: frozenset(answer_passages(c)),
    ),
    "multihop_rag-conflict": Dataset(
        news_conflict_cases,
        news_conflict_metrics,
        "pair_kept",
        lambda c: frozenset([c.true, c.counterfactual]),
        sides=lambda c: (frozenset([c.counterfactual]), frozenset([c.true])),
    ),
    "conflict_nq": Dataset(
        conflict_nq_cases,
        conflict_nq_metrics,
        "both_kept",
        lambda c: frozenset([c.real]),
        sides=lambda c: (c.fakes, frozenset([c.real])),
        answers=lambda c: (c.real_short_answer,),
    ),
}


@dataclass(frozen=True)
class Tools:
    """What packers are built from: the shared catalog, token counters, and the gold
    passages of every loaded case (the oracle's labels; ids are unique across sets),
    and the passages holding a case's short answer (`oracle-answer`'s)."""

    catalog: Catalog
    runtime: PackerRuntime
    count: Callable[[str], int]
    gold: frozenset[str] = frozenset()
    answer_gold: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PackerSpec:
    """A compared packer: its name, order policy, how to build it for a budget, and which
    sets it is run on (all by default)."""

    name: str
    order_policy: str
    build: Callable[[int, Tools], Packer]
    runs_on: Callable[[Dataset], bool] = lambda dataset: True


def _ours(**overrides: Any) -> Callable[[int, Tools], Packer]:
    def build(budget: int, tools: Tools) -> Packer:
        config = PackingConfig(max_evidence_tokens=budget, **overrides)
        return OurPacker(config, tools.catalog, tools.runtime)

    return build


def _naive(**options: Any) -> Callable[[int, Tools], Packer]:
    return lambda budget, tools: NaivePacker(budget, tools.count, **options)


def _naive_ours(budget: int, tools: Tools) -> Packer:
    """The naive loop rendering and charging our default block layout."""
    block = partial(our_format_block, layout_of(PackingConfig(), tools.runtime, budget))
    return NaivePacker(budget, tools.count, count_headers=True, block=block)


PACKERS: list[PackerSpec] = [
    PackerSpec("ours", "relevance", _ours()),
    *(PackerSpec(f"ours:{p}", p, _ours(order_policy=p)) for p in ORDER_POLICIES[1:]),
    *(PackerSpec(f"ours-{name}", "relevance", _ours(**o)) for name, o in ABLATIONS.items()),
    PackerSpec(
        "oracle",
        "gold",
        lambda budget, tools: OraclePacker(
            budget, layout_of(PackingConfig(), tools.runtime, budget), tools.gold
        ),
    ),
    PackerSpec(
        "oracle-answer",
        "gold",
        lambda budget, tools: OraclePacker(
            budget, layout_of(PackingConfig(), tools.runtime, budget), tools.answer_gold
        ),
        runs_on=lambda dataset: dataset.answer_gold is not None,
    ),
    PackerSpec("naive", "score", _naive()),
    PackerSpec("naive-exact", "score", _naive(count_headers=True)),
    PackerSpec("naive-ourformat", "score", _naive_ours),
    PackerSpec("llamaindex-truncate", "score", lambda b, _: LlamaIndexTruncate(b)),
    PackerSpec("llamaindex-repack", "score", lambda b, _: LlamaIndexRepack(b)),
    PackerSpec("haystack-litm", "edges", lambda b, _: HaystackLostInTheMiddle(b)),
]


def choose(names: Sequence[str], selectors: Sequence[str] | None) -> list[str]:
    """Names matching any selector: the exact name if there is one, else every prefix match."""
    if not selectors:
        return list(names)
    chosen: set[str] = set()
    for selector in selectors:
        matches = [selector] if selector in names else [n for n in names if n.startswith(selector)]
        if not matches:
            raise ValueError(f"{selector!r} matches none of: {', '.join(names)}")
        chosen.update(matches)
    return [n for n in names if n in chosen]


def tokens_used(packs: Sequence[Packed], count: Callable[[str], int]) -> list[int]:
    """Context tokens of each pack: the packer's ledger, or its context counted."""
    return [p.tokens if p.tokens is not None else count(p.context) for p in packs]


def token_stats(
    packs: Sequence[Packed], budget: int, count: Callable[[str], int]
) -> dict[str, float | int | None]:
    """Context tokens used and the evidence text in them."""
    used = tokens_used(packs, count)
    text = [sum(count(t) for t in p.shown.values()) for p in packs]
    return {
        "mean_tokens": round(sum(used) / len(used), 1),
        "mean_text_tokens": round(sum(text) / len(text), 1),
        "max_tokens": max(used),
        "over_budget": _share([u > budget for u in used]),
    }


def exclusions(packs: Sequence[Packed]) -> dict[str, float]:
    """Left-out candidates per request by reason, most frequent first."""
    totals: dict[str, int] = {}
    for packed in packs:
        for reason, n in (packed.excluded or {}).items():
            totals[reason] = totals.get(reason, 0) + n
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    return {reason: round(n / len(packs), 2) for reason, n in ranked}


def score_row(
    dataset: str,
    spec: PackerSpec,
    budget: int,
    cases: Sequence[Any],
    packs: Sequence[Packed],
    count: Callable[[str], int],
) -> dict[str, Any]:
    """One line of the quality table: the dataset's metrics, the common ones, detection."""
    data = DATASETS[dataset]
    used = tokens_used(packs, count)
    cut = [mid_sentence_cut(p, _texts(c)) for c, p in zip(cases, packs, strict=True)]
    partial_hits = [
        hit
        for c, p in zip(cases, packs, strict=True)
        for hit in partial_answers(p, _texts(c), data.answers(c))
    ]
    row: dict[str, Any] = {
        "dataset": dataset,
        "packer": spec.name,
        "order_policy": spec.order_policy,
        "budget": budget,
        "questions": len(cases),
        "primary": data.primary,
        **data.score(cases, packs, used),
        "mid_sentence_cut": _share(cut),
        "partial_blocks": len(partial_hits),
        "partial_answer": _share(partial_hits),
        "mean_blocks": round(sum(len(p.shown) for p in packs) / len(packs), 2),
        "empty_prompts": _share([not p.shown for p in packs]),
        **token_stats(packs, budget, count),
    }
    if all(p.excluded is not None for p in packs):
        row["excluded_per_request"] = exclusions(packs)
    if all(p.conflict_groups is not None for p in packs):
        row["conflict_silent"] = _share([silent_side(p) for p in packs])
    if data.sides is not None and all(p.conflict_groups is not None for p in packs):
        row.update(detection_metrics(cases, packs, data.sides))
    return row


def evaluate(
    data_dir: Path,
    limit: int | None,
    budgets: Sequence[int],
    datasets: Sequence[str],
    packers: Sequence[str],
) -> list[dict[str, Any]]:
    """Every chosen packer at every budget on every chosen dataset."""
    cases = {name: DATASETS[name].load(data_dir, limit) for name in datasets}
    catalog = Catalog(catalog_documents([c.request for cs in cases.values() for c in cs]))
    runtime = PackerRuntime.load()
    tokens = runtime.tokens
    gold = frozenset().union(*(DATASETS[name].gold(c) for name, cs in cases.items() for c in cs))
    answer_gold = frozenset().union(
        *(
            answers(c)
            for name, cs in cases.items()
            if (answers := DATASETS[name].answer_gold) is not None
            for c in cs
        )
    )
    tools = Tools(catalog, runtime, tiktoken_counter(tokens.encoding), gold, answer_gold)
    specs = [s for s in PACKERS if s.name in packers]
    rows = []
    with offline_cl100k_cache():
        for budget in budgets:
            for spec in specs:
                packer = spec.build(budget, tools)
                for name, dataset_cases in cases.items():
                    if not spec.runs_on(DATASETS[name]):
                        continue
                    started = time.perf_counter()
                    packs = [packer(case.request) for case in dataset_cases]
                    seconds = time.perf_counter() - started
                    row = score_row(name, spec, budget, dataset_cases, packs, tokens.count)
                    rows.append({**row, "pack_seconds": round(seconds, 3)})
    return rows


def seconds_by_packer(rows: Sequence[dict[str, Any]]) -> str:
    """Where a run's time went: packing seconds per packer, slowest first."""
    totals: dict[str, float] = {}
    for row in rows:
        totals[row["packer"]] = totals.get(row["packer"], 0.0) + row["pack_seconds"]
    ranked = sorted(totals.items(), key=lambda item: -item[1])
    return "packing seconds: " + ", ".join(f"{name} {s:.1f}" for name, s in ranked)


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """Per dataset: packers x budgets, each cell `primary metric/% over budget`."""
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        mine = [r for r in rows if r["dataset"] == dataset]
        budgets = sorted({r["budget"] for r in mine})
        out.append(
            f"{dataset} ({mine[0]['questions']} questions): {mine[0]['primary']} % / % over budget"
        )
        out.append(f"{'':30s}" + "".join(f"{b:>13d}" for b in budgets))
        for packer in dict.fromkeys(r["packer"] for r in mine):
            cells = {r["budget"]: r for r in mine if r["packer"] == packer}
            line = "".join(
                f"{cells[b][cells[b]['primary']]!s:>7}/{cells[b]['over_budget']!s:<5}"
                if b in cells
                else f"{'-':>13}"
                for b in budgets
            )
            out.append(f"{packer:30s}{line}")
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="holds hotpotqa/, ramdocs/, multihop_rag/ and conflict_nq/",
    )
    parser.add_argument("--datasets", nargs="+", help=f"of {', '.join(DATASETS)} (prefix ok)")
    parser.add_argument("--packers", nargs="+", help="packer names or prefixes (default: all)")
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each set")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--no-write", action="store_true", help="print only, write no file")
    args = parser.parse_args(argv)
    try:
        datasets = choose(list(DATASETS), args.datasets)
        packers = choose([s.name for s in PACKERS], args.packers)
    except ValueError as err:
        parser.error(str(err))
    started = time.perf_counter()
    try:
        rows = evaluate(args.data_dir, args.limit, args.budgets, datasets, packers)
    except DataMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(summary(rows))
    print("\n".join(t.line() for t in targets.evaluate(rows)))
    for verdict in targets.rule_verdicts(rows):
        print(f"rule {verdict.pop('rule')}: {verdict}")
    print(f"\n{seconds_by_packer(rows)}")
    print(f"{len(rows)} rows in {time.perf_counter() - started:.1f} s")
    if not args.no_write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        results = {"machine": machine(), "rows": rows}
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
