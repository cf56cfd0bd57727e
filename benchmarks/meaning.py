"""Evidence keeps its meaning: folds that never change a fact, and conflicts by value type.

    python -m benchmarks.meaning --data-dir ../shared/data [--limit N] [--no-write]

Three measurements, written to `results/meaning.json` and the report:

- perturbation: real passages (HotpotQA paragraphs that state a number, and
  that contain " is " for the modal and negation edits), each edited once
  in a way that changes what it says (a minus sign, `$` for `€`, `%`
  dropped, `<N` for `>N`, a superscript for a digit, `must` for `may`, `not`
  added) or only how it is written (case, spacing, thousands separator,
  wire dateline, full-width digits). The original and the edit are packed as
  two candidates, of two documents and as two chunks of one revision; a pair
  is folded when one reaches the prompt only through the other. Meaning
  edits must never fold (flagged is better), formatting edits always should
  (an upper-cased passage that then starts like a dateline, "HOLIDAY INN
  ORLANDO - ...", or holds a dotless "ı", is not folded: a miss, never a
  changed fact);
- conflicts: every labelled set packed at 2,048 evidence tokens with each
  rule set (`copy`, the default; `slot`: numbers and dates; `name`; and
  the opt-in rules added in turn); a flagged pair (two members of one
  conflict group the manifest lists, packed or not) is true when one side
  is misinformation/fake and the other correct/real, counted per value type
  the group names (`copy`, `number`, `date`, `name`) and for all groups; recall
  is the share of misinformation/fake passages grouped with a correct/real
  one. On HotpotQA and MultiHop-RAG, which hold no conflicts, the share of
  requests with any flag (all false);
- polarity: a negation set built from the sets without conflicts (HotpotQA,
  MultiHop-RAG): in each request one sentence of a gold passage is negated
  (`not` after its verb, "It is not true that ...", or its negation taken
  out, in turn) and put, as a new document, before another candidate's text;
  a request counts as flagged when a conflict group of rule `polarity` holds
  the original and the edited passage. False flags: the unedited requests
  with any `polarity` group;
- cost: `deduplicate` (every dedup level and conflict rule) per request at 10
  and 50 candidates (RAMDocs questions, their documents padded with other
  questions' documents), with the `copy` rule alone, with `polarity`, and with
  the `slot` and `name` rules, on a cold runtime
  (claims not yet memoized) and a warm one; median of repeats of the process's
  CPU time (other jobs on the machine do not count).
"""

import argparse
import hashlib
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any

from benchmarks.adapters import (
    DEFAULT_DATA_DIR,
    EVAL_TIME,
    DataMissingError,
    Paragraph,
    build_request,
    catalog_documents,
    conflict_nq_cases,
    hotpotqa_cases,
    multihop_cases,
    ramdocs_cases,
)
from benchmarks.stamp import machine
from packer import Catalog, PackerRuntime, pack_request, slot_conflicts
from packer.dedup import deduplicate
from packer.gates import apply_gates
from packer.question import read_question
from packer.runtime import Memos
from schemas import DedupConfig, PackingConfig, Request

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "meaning.json"
BUDGET = 2048
TARGETS = {
    "meaning_edits_folded": 0.0,
    "conflict_nq": {"recall": 0.2, "precision": 0.7},
    "ramdocs": {"recall": 0.6, "precision": 0.6},
    "false_flags": {"hotpotqa": 8.0, "multihop_rag": 1.0},
    "added_ms_at_50": 2.0,
}


def _first_number(text: str) -> tuple[int, int] | None:
    """[start, end) of the first run of digits standing alone (not inside a word)."""
    for i, c in enumerate(text):
        if c.isdigit() and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "-+$.,")):
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            if j == len(text) or not text[j].isalpha():
                return i, j
    return None


def _around(text: str, before: str, after: str, span: tuple[int, int]) -> str:
    i, j = span
    return text[:i] + before + text[i:j] + after + text[j:]


MEANING_EDITS: dict[str, Callable[[str, tuple[int, int]], tuple[str, str] | None]] = {
    "sign": lambda t, n: (t, _around(t, "-", "", n)),
    "currency": lambda t, n: (_around(t, "$", "", n), _around(t, "\u20ac", "", n)),
    "percent": lambda t, n: (_around(t, "", "%", n), t),
    "operator": lambda t, n: (_around(t, "<", "", n), _around(t, ">", "", n)),
    "superscript": lambda t, n: (_around(t, "", " km\u00b2", n), _around(t, "", " km2", n)),
    "modal": lambda t, n: (
        (t.replace(" is ", " must be ", 1), t.replace(" is ", " may be ", 1))
        if " is " in t
        else None
    ),
    "negation": lambda t, n: (t, t.replace(" is ", " is not ", 1)) if " is " in t else None,
}
FORMATTING_EDITS: dict[str, Callable[[str], str]] = {
    "case": str.upper,
    "spacing": lambda t: "  ".join(t.split()),
    "dateline": lambda t: "LONDON (Reuters) - " + t,
    "full-width digits": lambda t: t.translate({ord(d): 0xFF10 + int(d) for d in "0123456789"}),
}


def _pair_request(key: str, a: str, b: str, same_revision: bool) -> Request:
    """`a` (ranked first) and `b`: two documents, or two chunks of one revision."""
    paragraphs = [
        Paragraph(key=f"{key}.a", title=None, text=a, score=1.0,
                  **({"document": key, "chunk": 0} if same_revision else {})),
        Paragraph(key=f"{key}.b", title=None, text=b, score=0.5,
                  **({"document": key, "chunk": 1} if same_revision else {})),
    ]  # fmt: skip
    return build_request(key, "What does the passage report?", paragraphs)


def _judge(requests: list[Request], runtime: PackerRuntime) -> tuple[list[bool], list[bool]]:
    """For each pair request: (folded, flagged as a conflict)."""
    catalog = Catalog(catalog_documents(requests))
    config = PackingConfig(max_evidence_tokens=BUDGET)
    folded, flagged = [], []
    for request in requests:
        result = pack_request(request, catalog, config, runtime, EVAL_TIME)
        folded.append(
            any(e.derived_from for e in result.manifest.evidence)
            or any(x.reason.value.startswith("duplicate") for x in result.exclusions)
        )
        flagged.append(bool(result.manifest.conflicts))
    return folded, flagged


def perturbation(data_dir: Path, limit: int, runtime: PackerRuntime) -> list[dict[str, Any]]:
    """The perturbation table: one row per edit kind and setting."""
    texts = [c.text for case in hotpotqa_cases(data_dir, limit) for c in case.request.candidates]
    numbered = [(t, n) for t in texts if (n := _first_number(t)) is not None][:PASSAGES]
    rows = []
    edits: list[tuple[str, str, Callable[[str, tuple[int, int]], tuple[str, str] | None]]] = [
        *(("meaning", k, f) for k, f in MEANING_EDITS.items()),
        *(("formatting", k, lambda t, n, f=f: (t, f(t))) for k, f in FORMATTING_EDITS.items()),
    ]
    for kind, name, edit in edits:
        pairs = [p for t, n in numbered if (p := edit(t, n)) is not None]
        for same_revision in (False, True):
            requests = [
                _pair_request(f"pt{i}", a, b, same_revision) for i, (a, b) in enumerate(pairs)
            ]
            folded, flagged = _judge(requests, runtime)
            rows.append(
                {
                    "kind": kind,
                    "edit": name,
                    "setting": "one revision" if same_revision else "two documents",
                    "pairs": len(pairs),
                    "folded": _share(folded),
                    "flagged": _share(flagged),
                }
            )
    return rows


PASSAGES = 400


def _share(flags: Sequence[bool]) -> float | None:
    return round(100.0 * sum(flags) / len(flags), 1) if flags else None


def _pack_all(
    requests: Sequence[Request], runtime: PackerRuntime, config: PackingConfig
) -> list[Any]:
    catalog = Catalog(catalog_documents(requests))
    return [pack_request(r, catalog, config, runtime, EVAL_TIME).manifest for r in requests]


RULE_SETS = {
    "copy": ("copy",),
    "polarity": ("polarity",),
    "copy+polarity": ("copy", "polarity"),
    "slot": ("slot",),
    "name": ("name",),
    "copy+slot": ("copy", "slot"),
    "copy+slot+name": ("copy", "slot", "name"),
}
"""Each rule alone (`copy` is the default: a rule's groups would otherwise merge
with another's and blur its precision), and the opt-in rules added in turn."""


def _detection(
    cases: Sequence[tuple[Request, frozenset[str], frozenset[str]]], manifests: Sequence[Any]
) -> dict[str, tuple[int, int, set[str]]]:
    """Per value type a group names (`copy`, `number`, `date`, `name`) and `all`: (flagged
    pairs, true pairs, wrong passages grouped with a right one)."""
    out: dict[str, tuple[int, int, set[str]]] = defaultdict(lambda: (0, 0, set()))
    for (_, wrong, right), manifest in zip(cases, manifests, strict=True):
        for conflict in manifest.conflicts:
            group = set(conflict.evidence_ids)
            pairs = list(combinations(sorted(group), 2))
            true = sum((a in wrong and b in right) or (a in right and b in wrong) for a, b in pairs)
            for kind in [*conflict.rules, "all"]:
                flagged, hits, found = out[kind]
                out[kind] = (
                    flagged + len(pairs),
                    hits + true,
                    found | (group & wrong if group & right else set()),
                )
    return out


def conflicts(data_dir: Path, limit: int | None, runtime: PackerRuntime) -> dict[str, Any]:
    """Precision and recall per labelled set, rule set and value type; false flags on
    the sets without conflicts."""
    labelled = {
        "ramdocs": [(c.request, c.misinfo, c.correct) for c in ramdocs_cases(data_dir, limit)],
        "conflict_nq": [
            (c.request, c.fakes, frozenset([c.real])) for c in conflict_nq_cases(data_dir, limit)
        ],
    }
    unlabelled = {
        "hotpotqa": [c.request for c in hotpotqa_cases(data_dir, limit)],
        "multihop_rag": [c.request for c in multihop_cases(data_dir, limit)],
    }
    out: dict[str, Any] = {"detection": [], "false_flags": []}
    for rule_set, rules in RULE_SETS.items():
        config = PackingConfig(max_evidence_tokens=BUDGET, dedup=DedupConfig(conflict_rules=rules))
        for name, cases in labelled.items():
            manifests = _pack_all([r for r, _, _ in cases], runtime, config)
            wrong_total = sum(len(wrong) for _, wrong, _ in cases)
            for kind, (pairs, true, found) in sorted(_detection(cases, manifests).items()):
                out["detection"].append(
                    {
                        "dataset": name,
                        "rules": rule_set,
                        "value_type": kind,
                        "pairs": pairs,
                        "precision": round(true / pairs, 3) if pairs else None,
                        "recall": round(len(found) / wrong_total, 3) if wrong_total else None,
                    }
                )
        for name, requests in unlabelled.items():
            manifests = _pack_all(requests, runtime, config)
            out["false_flags"].append(
                {"dataset": name, "rules": rule_set,
                 "requests_flagged": _share([bool(m.conflicts) for m in manifests])}
            )  # fmt: skip
    return out


_VERB = re.compile(r" (is|was|are|were|has|had|have|can|will|does|did|could|would|should|must) ")
_NEGATED = re.compile(r" (?:not|never|no longer) | cannot |n't ")


def negate(sentence: str, style: int) -> str | None:
    """The sentence said the other way: its negation taken out when it has one, else
    `not` after its first verb (`style` even; `can` -> `cannot`) or "It is not true
    that ..." (`style` odd). None when there is no verb to negate."""
    found = _NEGATED.search(sentence)
    if found:
        replacement = " can " if found.group() == " cannot " else " "
        if found.group() == "n't ":
            return None
        return sentence[: found.start()] + replacement + sentence[found.end() :]
    if style % 2:
        return f"It is not true that {sentence[0].lower()}{sentence[1:]}"
    verb = _VERB.search(sentence)
    if verb is None:
        return None
    word = verb.group(1)
    negated = "cannot" if word == "can" else f"{word} not"
    return sentence[: verb.start()] + f" {negated} " + sentence[verb.end() :]


def negation_case(
    request: Request, gold: Sequence[str], index: int, runtime: PackerRuntime
) -> tuple[Request, str, str] | None:
    """The request with one more candidate: a sentence of the first gold passage that
    can be negated, negated, before another document's text. (request, original id,
    edited id), or None when no sentence of a gold passage takes a negation or no other
    document is there to carry it."""
    by_id = {c.evidence_id: c for c in request.candidates}
    for evidence_id in gold:
        original = by_id[evidence_id]
        for statement in runtime.memos.statements(original.text).all:
            sentence = original.text[statement.start : statement.end]
            edited = negate(sentence, index) if len(statement.content) >= 3 else None
            if edited is None:
                continue
            other = next(
                (c for c in request.candidates if c.document_id != original.document_id), None
            )
            if other is None:
                return None
            text = f"{edited} {other.text}"
            candidate = other.model_copy(
                update={
                    "evidence_id": f"{evidence_id}~neg",
                    "document_id": f"{original.document_id}~neg",
                    "chunk_id": f"{original.document_id}~neg#0",
                    "text": text,
                    "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    "span": None,
                    "title": None,
                }
            )
            update = {"candidates": (*request.candidates, candidate)}
            return request.model_copy(update=update), evidence_id, candidate.evidence_id
    return None


def polarity(data_dir: Path, limit: int | None, runtime: PackerRuntime) -> list[dict[str, Any]]:
    """The negation set: per set, edited requests flagged by the `polarity` rule (and by
    any rule), and unedited requests with a `polarity` group (all false)."""
    sets = {
        "hotpotqa": [(c.request, sorted(c.supporting)) for c in hotpotqa_cases(data_dir, limit)],
        "multihop_rag": [
            (c.request, sorted(c.evidence)) for c in multihop_cases(data_dir, limit) if c.evidence
        ],
    }
    config = PackingConfig(
        max_evidence_tokens=BUDGET, dedup=DedupConfig(conflict_rules=("copy", "polarity"))
    )
    rows = []
    for name, cases in sets.items():
        edited = [
            e for i, (r, gold) in enumerate(cases) if (e := negation_case(r, gold, i, runtime))
        ]
        manifests = _pack_all([r for r, _, _ in edited], runtime, config)
        by_rule, by_any = [], []
        for (_, original, negated), manifest in zip(edited, manifests, strict=True):
            groups = [(set(c.evidence_ids), c.rules) for c in manifest.conflicts]
            by_rule.append(any({original, negated} <= g and "polarity" in r for g, r in groups))
            by_any.append(any({original, negated} <= g for g, _ in groups))
        plain = _pack_all([r for r, _ in cases], runtime, config)
        rows.append(
            {
                "dataset": name,
                "edited_requests": len(edited),
                "flagged_polarity": _share(by_rule),
                "flagged_any_rule": _share(by_any),
                "requests": len(plain),
                "false_flags": _share(
                    [any("polarity" in c.rules for c in m.conflicts) for m in plain]
                ),
            }
        )
    return rows


def _padded(cases: list[Request], size: int) -> list[Request]:
    """Each request's candidates padded to `size` with other requests' (a small set
    reuses them, renamed, so that evidence ids stay distinct)."""
    pool = [c for r in cases for c in r.candidates]
    out = []
    for i, request in enumerate(cases):
        own = list(request.candidates)[:size]
        others = [c for c in pool[i * 7 :] + pool[: i * 7] if c not in own]
        padding = [
            others[k % len(others)].model_copy(
                update={"evidence_id": f"{others[k % len(others)].evidence_id}~{k}"}
            )
            for k in range(size - len(own))
        ]
        out.append(request.model_copy(update={"candidates": tuple(own + padding)}))
    return out


def cost(data_dir: Path, runtime: PackerRuntime, repeat: int = 5) -> list[dict[str, Any]]:
    """Milliseconds of `deduplicate` per request, with and without the slot rules."""
    requests = [c.request for c in ramdocs_cases(data_dir, 100)]
    rows = []
    for size in (10, 50):
        padded = _padded(requests, size)
        catalog = Catalog(catalog_documents(padded))
        gated = [apply_gates(r, sorted(r.candidates, key=lambda c: c.evidence_id), catalog,
                             EVAL_TIME, runtime.memos)[0] for r in padded]  # fmt: skip
        for rules in (("copy",), ("copy", "polarity"), ("copy", "slot", "name")):
            config = DedupConfig(conflict_rules=rules)
            for state in ("cold", "warm"):
                times = []
                for _ in range(repeat):
                    memos = Memos()
                    if state == "warm":
                        _dedup_all(padded, gated, config, memos)
                    start = time.process_time()
                    _dedup_all(padded, gated, config, memos)
                    times.append((time.process_time() - start) * 1000 / len(padded))
                rows.append(
                    {
                        "candidates": size,
                        "rules": "+".join(rules),
                        "memos": state,
                        "ms_per_request": round(statistics.median(times), 3),
                    }
                )
    return rows


def _dedup_all(
    requests: list[Request], gated: list[list[Any]], config: DedupConfig, memos: Memos
) -> None:
    for request, records in zip(requests, gated, strict=True):
        fresh = [replace(r, facts=memos.text_facts(r.text), derived_from=[]) for r in records]
        deduplicate(fresh, config, memos, question=read_question(request.question))


def report_section(result: dict[str, Any]) -> list[str]:
    """The meaning and conflicts section of REPORT.md."""
    perturbation_rows = [
        f"| {r['kind']} | {r['edit']} | {r['setting']} | {r['pairs']} | {r['folded']} | "
        f"{r['flagged']} |"
        for r in result["perturbation"]
    ]
    detection_rows = [
        f"| {r['dataset']} | {r['rules']} | {r['value_type']} | {r['pairs']} | "
        f"{r['precision']} | {r['recall']} |"
        for r in result["conflicts"]["detection"]
    ]
    flag_rows = [
        f"| {r['dataset']} | {r['rules']} | {r['requests_flagged']} |"
        for r in result["conflicts"]["false_flags"]
    ]
    cost_rows = [
        f"| {r['candidates']} | {r['rules']} | {r['memos']} | {r['ms_per_request']} |"
        for r in result["cost"]
    ]
    return [
        "## Meaning kept: folds and conflicts",
        "",
        "Reproduce: `make eval` (or `python -m benchmarks.meaning`). "
        f"Targets: {json.dumps(result['targets'])}.",
        "",
        "| edit | change | setting | pairs | % folded | % flagged |",
        "|---|---|---|---|---|---|",
        *perturbation_rows,
        "",
        "| dataset | conflict rules | value type | flagged pairs | precision | recall |",
        "|---|---|---|---|---|---|",
        *detection_rows,
        "",
        "| dataset (no conflicts) | conflict rules | % requests flagged |",
        "|---|---|---|",
        *flag_rows,
        "",
        "| candidates | conflict rules | memos | dedup ms / request |",
        "|---|---|---|---|",
        *cost_rows,
        "",
        __doc__.split("\n\n", 2)[2].strip(),
        "",
        "Whether the typed rules are on by default, decided from these figures"
        " (`packer.slot_conflicts`):",
        "",
        (slot_conflicts.__doc__ or "").split("\n\n", 1)[1].strip(),
        "",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each set")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-write", action="store_true", help="print only, write no file")
    args = parser.parse_args(argv)
    runtime = PackerRuntime.load()
    try:
        result = {
            "machine": machine(),
            "targets": TARGETS,
            "perturbation": perturbation(args.data_dir, args.limit or 500, runtime),
            "conflicts": conflicts(args.data_dir, args.limit, runtime),
            "polarity": polarity(args.data_dir, args.limit, runtime),
            "cost": cost(args.data_dir, runtime),
        }
    except DataMissingError as error:
        print(error, file=sys.stderr)
        return 2
    print("\n".join(report_section(result)[:-3]))
    if not args.no_write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
