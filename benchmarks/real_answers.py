"""Real model answers for the verification bench: AttributionBench claims packed and verified.

    python -m benchmarks.verification --data-dir ../shared/data [--real-splits dev test500 test_ood]

Each record of `real_answers/attributionbench_<split>.jsonl` (claims that real
models and search engines wrote, each with the passages it rests on and a
human judgment: `attributable` or not) becomes one request whose candidates are
its references, packed by `evpack batch` (one catalog document per reference,
no budget pressure: every reference is packed unless deduplication folds it
into another). The claim is the answer: HAGRID's `[n]` is rewritten to the
label the manifest gave the passage that starts with `[n]` (or the one it was
folded into); a claim without markers cites every label of its packet after
each sentence (the per-citation scope needs citations to check anything). A
whole answer is a response whose every claim in the split is `attributable`
(with at least two), and every sentence of which lies in a judged claim: it is
verified against the packet of all their references.
Answers are verified by `evpack verify` (`pipelines.verification.verify.run`, in this
process: the same code path as the command) in both scopes, and in the citation scope
with `--citation_span paragraph`, as plain `{request_id, answer}` lines; in the packet
scope the answer is the claim as written, markers removed. False flags are the checks
that fail an answer; `names_supported`, reported but not gating by default, is
measured apart: its false flags, and how many wrong claims it flags. Each false flag is
told apart by kind (`false_flag_kind`): a figure the references do not hold as digits, or a
quotation with a word they do not hold (the judges accepted what the snippet does not say:
counted and shown, never read away), a sentence without a citation of its own (a claim cited
once after several sentences, the paragraph style), or the checker's reading.

Measured: false flags on `attributable` claims (any check failing) by check
and by source; the catch rate on `not attributable` claims that a
deterministic check can reach, those stating a figure (a run of digits,
separators ignored) that neither the references nor the question hold as a
substring (a crude test on purpose: independent of the checker's own
reading, and never counting a figure as absent that the text holds); how
many `not attributable` claims no deterministic check can reach, by kind:
a name (a capitalised word not opening the claim) absent from the references,
a negation absent from them, or neither (every figure and name present: a
meaning error). Records without references (75 HAGRID claims) cannot be
packed and are counted apart.
"""

import hashlib
import json
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.adapters import EVAL_TIME
from packer.verification.answer_sentences import split_sentences
from packer.verification.answers import parse_prompt_line
from pipelines import batch
from pipelines.verification import verify
from schemas import ManifestRow
from transforms.record_files import matching_files, read_parquet

SPLITS = ("dev", "test500", "test_ood")
TUNING_SPLIT = "dev"
SCOPES = ("citation", "packet", "paragraph")
"""How the claims are verified: `--scope citation`, `--scope packet`, and `--scope citation
--citation_span paragraph` (answers that cite once after several sentences)."""
FLAGS_OF = {
    "citation": ["--scope=citation"],
    "packet": ["--scope=packet"],
    "paragraph": ["--scope=citation", "--citation_span=paragraph"],
}
ADVISORY = frozenset({"names_supported"})
"""Checks reported but not failing an answer by default (`evpack verify --gate_names`): not
false flags of the gate; measured apart."""
TENANT = "bench"
GROUP = "readers"
TARGET_CLAIM_FALSE_FLAGS = 0.01
TARGET_WHOLE_FALSE_FLAGS = 0.03
TARGET_CATCH_RATE = 0.95
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
"""HAGRID's citation markers: `[2]`, `[1, 3]`."""
_LEADING_MARKER = re.compile(r"^\s*\[(\d{1,3})\]\s*")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_ITEM = re.compile(r"^\s*\d{1,2}[.)]\s")
_NAME = re.compile(r"(?<=\s)[A-Z][a-z]{2,}")
_NEGATION = re.compile(r"\b(?:not|never|no|none|neither|nor|without)\b|n't\b", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """One judged claim (or whole answer) as the bench verifies it."""

    request_id: str
    source: str
    attributable: bool
    text: str
    question: str
    references: tuple[str, ...]
    whole: bool = False


def load(data_dir: Path, split: str) -> list[dict[str, Any]]:
    path = data_dir / "real_answers" / f"attributionbench_{split}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def claims_of(records: Sequence[dict[str, Any]]) -> list[Claim]:
    """Every record with references as a claim, and every whole answer the split holds."""
    claims = []
    by_response: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for n, r in enumerate(records):
        if not r["references"]:
            continue
        claims.append(
            Claim(
                f"c{n:05d}",
                r["src_dataset"],
                r["attribution_label"] == "attributable",
                r["claim"],
                r["question"] or "",
                tuple(r["references"]),
            )
        )
        by_response[(r["src_dataset"], r["question"], r["response"])].append(r)
    for n, ((source, question, response), group) in enumerate(sorted(by_response.items())):
        if len(group) < 2 or any(r["attribution_label"] != "attributable" for r in group):
            continue
        judged = [_folded(r["claim"]) for r in group]
        sentences = [_folded(s) for s in split_sentences(response)]
        if not all(any(s in c or c in s for c in judged) for s in sentences):
            continue  # a sentence nobody judged
        references = tuple(dict.fromkeys(ref for r in group for ref in r["references"]))
        claims.append(Claim(f"w{n:05d}", source, True, response, question, references, True))
    return claims


def _folded(text: str) -> str:
    return " ".join(_MARKER.sub("", text).split()).casefold()


def _reference_text(reference: str) -> str:
    return _LEADING_MARKER.sub("", reference, count=1)


def request_and_documents(claim: Claim) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The claim's request (its references as candidates) and one catalog document each."""
    when = (EVAL_TIME - timedelta(days=30)).isoformat()
    candidates, documents = [], []
    for i, reference in enumerate(claim.references):
        document = f"{claim.request_id}-r{i}"
        text = _reference_text(reference)
        candidates.append(
            {
                "evidence_id": document,
                "tenant_id": TENANT,
                "document_id": document,
                "revision_id": "r1",
                "chunk_id": f"{document}#0",
                "source_url": f"bench://{document}",
                "effective_at": when,
                "span": {"start": 0, "end": len(text)},
                "text": text,
                "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "retrieval_score": 1.0 - i / 1000,
            }
        )
        documents.append(
            {
                "tenant_id": TENANT,
                "document_id": document,
                "allowed_groups": [GROUP],
                "revisions": [{"revision_id": "r1", "effective_at": when}],
            }
        )
    request = {
        "request_id": claim.request_id,
        "tenant_id": TENANT,
        "principal": {"user_id": "bench", "groups": [GROUP]},
        "question": claim.question.strip() or "(no question)",
        "event_time": EVAL_TIME.isoformat(),
        "candidates": candidates,
    }
    return request, documents


CONFIG = "tokenizer: cl100k_base\ninput_limit: 60000\nreserved_answer: 512\n"
"""No budget pressure: every reference fits (the longest packet is some 20,000 tokens)."""


def pack(claims: Sequence[Claim], work: Path) -> Path:
    """`evpack batch` over the claims' requests; returns the run directory."""
    lines, catalog = [], []
    for claim in claims:
        request, documents = request_and_documents(claim)
        lines.append(json.dumps(request))
        catalog.extend(json.dumps(d) for d in documents)
    (work / "requests.jsonl").write_text("\n".join(lines) + "\n")
    (work / "catalog.jsonl").write_text("\n".join(catalog) + "\n")
    (work / "config.yaml").write_text(CONFIG)
    run = work / "run"
    batch.run(
        [
            f"--input={work / 'requests.jsonl'}",
            f"--catalog={work / 'catalog.jsonl'}",
            f"--config={work / 'config.yaml'}",
            f"--output={run}",
            "--prompt_format=openai_batch",
            f"--event_time={EVAL_TIME.isoformat()}",
        ]
    )
    return run


def labels_of(run: Path) -> dict[str, dict[str, str]]:
    """Each request's evidence ids (and those folded into them) by the label shown."""
    labels: dict[str, dict[str, str]] = {}
    for f in matching_files(f"{run}/manifests/*.parquet"):
        for row in read_parquet(f).to_pylist():
            manifest = ManifestRow.model_validate(row)
            labels[manifest.request_id] = {
                i: e.label for e in manifest.evidence for i in (e.evidence_id, *e.derived_from)
            }
    return labels


def cited_answer(claim: Claim, labels: dict[str, str]) -> str:
    """The claim with `[n]` as the label of its passage, or each sentence citing every label."""
    numbers = {}
    for i, reference in enumerate(claim.references):
        marker = _LEADING_MARKER.match(reference)
        if marker:
            numbers.setdefault(marker[1], f"{claim.request_id}-r{i}")
    if _MARKER.search(claim.text) and numbers:

        def label(m: re.Match[str]) -> str:
            cited = [numbers.get(n.strip()) for n in m[1].split(",")]
            if not all(cited):
                return m[0]
            return "[" + ", ".join(labels.get(e or "", "E0") for e in cited) + "]"

        return _MARKER.sub(label, claim.text)
    every = ", ".join(sorted(set(labels.values()), key=lambda x: (len(x), x)))
    return " ".join(f"{s} [{every}]" for s in split_sentences(claim.text))


def plain_answer(claim: Claim) -> str:
    return _MARKER.sub("", claim.text)


def verified(
    run: Path,
    answers: dict[str, str],
    scope: str,
    work: Path,
    offending: dict[str, list[str]],
) -> dict[str, list[str]]:
    """`evpack verify` over plain answer lines: each request's failed checks (and into
    `offending`, what failed them)."""
    path = work / f"answers-{scope}.jsonl"
    path.write_text(
        "".join(json.dumps({"request_id": k, "answer": v}) + "\n" for k, v in answers.items())
    )
    out = work / f"verified-{scope}"
    verify.run(
        [f"--answers={path}", f"--run={run}", f"--output={out}", *FLAGS_OF[scope], "--overwrite"]
    )
    failed: dict[str, list[str]] = {}
    for f in matching_files(f"{out}/verifications/*/*.parquet"):
        for row in read_parquet(f, columns=["request_id", "failed_checks", "checks"]).to_pylist():
            failed[row["request_id"]] = row["failed_checks"]
            offending[row["request_id"]] = [
                f"{c['name']}: {c['offending']}" for c in row["checks"] if c["outcome"] == "fail"
            ]
    return failed


def _figures(text: str) -> set[str]:
    """Digit runs, separators dropped; not a list item's number ("4. Turn it on")."""
    text = _ITEM.sub("", text)
    return {m[0].replace(",", "").rstrip(".") for m in _DIGITS.finditer(text)}


def reachable(claim: Claim) -> bool:
    """Whether a figure of the claim is absent, as digits, from the references and question."""
    held = (" ".join(claim.references) + " " + claim.question).replace(",", "")
    return any(f not in held for f in _figures(plain_answer(claim)))


def unreachable_kind(claim: Claim) -> str:
    """Why no deterministic check reaches a wrong claim, roughly (see the module docstring)."""
    held = " ".join(claim.references) + " " + claim.question
    text = plain_answer(claim)
    if not _figures(text) and not any(q in text for q in '"“'):
        kind = "no figure or quote"
    else:
        kind = "figures present"
    if any(name not in held for name in _NAME.findall(text)):
        return f"{kind}: a name absent"
    if _NEGATION.search(text) and not _NEGATION.search(held):
        return f"{kind}: negation"
    return f"{kind}: meaning"


FALSE_FLAG_KINDS = {
    "figure absent": "a figure the references do not hold as digits (the judges accepted it)",
    "quote absent": "a quotation with a word the references do not hold (the judges accepted it)",
    "uncited sentence": "a sentence of the claim without a citation of its own (paragraph style)",
    "reading": "every figure and quoted word held: the checker's reading missed it",
}
"""Why a supported claim was flagged, by crude tests independent of the checker (`reachable`,
`quote_absent`): a false flag on a figure or a quotation the references do not hold is the
judges' leniency, not a reading to loosen."""
_QUOTATION = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”")
_QUOTED_WORD = re.compile(r"\w+")


def quote_absent(claim: Claim) -> bool:
    """Whether a quotation of the claim (four words or more) has a word, in any case, that
    neither the references nor the question hold."""
    held = set(_QUOTED_WORD.findall((" ".join(claim.references) + " " + claim.question).casefold()))
    for m in _QUOTATION.finditer(plain_answer(claim)):
        words = _QUOTED_WORD.findall((m[1] or m[2]).casefold())
        if len(words) >= 4 and not held.issuperset(words):
            return True
    return False


def false_flag_kind(claim: Claim, failed: Sequence[str]) -> str:
    """The `FALSE_FLAG_KINDS` key of a flagged supported claim."""
    if reachable(claim):
        return "figure absent"
    if "figures_supported" in failed and quote_absent(claim):
        return "quote absent"
    return "uncited sentence" if list(failed) == ["factual_sentences_cited"] else "reading"


def _by_kind(
    good: Sequence[Claim], failed: dict[str, list[str]], offending: dict[str, list[str]]
) -> dict[str, dict[str, Any]]:
    """False flags by `false_flag_kind`, each with its count, its share of the false flags and
    three examples."""
    kinds: dict[str, list[str]] = defaultdict(list)
    for c in good:
        if checks := failed.get(c.request_id):
            shown = [o for o in offending[c.request_id] if o.split(":")[0] in checks]
            kinds[false_flag_kind(c, checks)].append(f"{shown}: {c.text[:200]}")
    flags = sum(map(len, kinds.values()))
    return {
        k: {"n": len(v), "share": len(v) / flags, "examples": v[:3]}
        for k, v in sorted(kinds.items())
    }


def _rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def measure_split(claims: Sequence[Claim], unreferenced: int, work: Path) -> dict[str, Any]:
    """Pack and verify one split in both scopes; false flags, catch rate, unreachable errors."""
    run = pack(claims, work)
    labels = labels_of(run)
    packed = [c for c in claims if c.request_id in labels]
    result: dict[str, Any] = {"claims": sum(not c.whole for c in claims) + unreferenced}
    result["without_references"] = unreferenced
    result["not_packed"] = len(claims) - len(packed)
    for scope in SCOPES:
        if scope == "packet":
            answers = {c.request_id: plain_answer(c) for c in packed}
        else:
            answers = {c.request_id: cited_answer(c, labels[c.request_id]) for c in packed}
        offending: dict[str, list[str]] = {}
        failed = verified(run, answers, scope, work, offending)
        result[scope] = scope_figures(packed, failed, offending)
    prompts = {}
    for f in matching_files(f"{run}/prompts/*.jsonl"):
        for line in Path(f).read_text().splitlines():
            prompt = parse_prompt_line(line)
            prompts[prompt.key] = len(prompt.blocks)
    result["blocks"] = sum(prompts.values())
    return result


def scope_figures(
    claims: Sequence[Claim], failed: dict[str, list[str]], offending: dict[str, list[str]]
) -> dict[str, Any]:
    """False flags by check and source, catch rate, and what no check reaches; the advisory
    checks (`ADVISORY`) apart, with what they catch."""
    names = _names_figures(claims, failed)
    failed = {k: [n for n in v if n not in ADVISORY] for k, v in failed.items()}
    good = [c for c in claims if c.attributable and not c.whole]
    whole = [c for c in claims if c.whole]
    bad = [c for c in claims if not c.attributable]
    by_check: Counter[str] = Counter(n for c in good for n in failed.get(c.request_id, []))
    by_source: dict[str, list[bool]] = defaultdict(list)
    for c in good:
        by_source[c.source].append(bool(failed.get(c.request_id)))
    reach = [c for c in bad if reachable(c)]
    unreached = Counter(unreachable_kind(c) for c in bad if not reachable(c))
    missed_bad = [c for c in reach if not failed.get(c.request_id)]
    return {
        "attributable": len(good),
        "false_flag_rate": _rate([bool(failed.get(c.request_id)) for c in good]),
        "false_flags_by_check": dict(by_check.most_common()),
        "false_flags_by_kind": _by_kind(good, failed, offending),
        "false_flags_by_source": {
            k: {"n": len(v), "rate": _rate(v)} for k, v in sorted(by_source.items())
        },
        "whole_answers": len(whole),
        "whole_false_flag_rate": _rate([bool(failed.get(c.request_id)) for c in whole]),
        "not_attributable": len(bad),
        "flagged_not_attributable": _rate([bool(failed.get(c.request_id)) for c in bad]),
        "reachable": len(reach),
        "catch_rate": _rate([bool(failed.get(c.request_id)) for c in reach]),
        "unreachable": sum(unreached.values()),
        "unreachable_by_kind": dict(sorted(unreached.items())),
        "examples_flagged": [
            f"{offending[c.request_id]}: {c.text[:300]}"
            for c in (*good, *whole)
            if failed.get(c.request_id)
        ][:40],
        "examples_missed": [c.text[:200] for c in missed_bad][:5],
        "names_supported": names,
    }


def _names_figures(claims: Sequence[Claim], failed: dict[str, list[str]]) -> dict[str, Any]:
    """`names_supported` alone: its false flags on attributable claims, and its catches on
    not-attributable ones, all of them and those whose kind is "a name absent"."""

    def flagged(c: Claim) -> bool:
        return "names_supported" in failed.get(c.request_id, [])

    good = [c for c in claims if c.attributable and not c.whole]
    bad = [c for c in claims if not c.attributable]
    absent = [c for c in bad if not reachable(c) and unreachable_kind(c).endswith("a name absent")]
    return {
        "false_flags": sum(map(flagged, good)),
        "false_flag_rate": _rate([flagged(c) for c in good]),
        "caught_not_attributable": sum(map(flagged, bad)),
        "catch_rate_not_attributable": _rate([flagged(c) for c in bad]),
        "name_absent": len(absent),
        "catch_rate_name_absent": _rate([flagged(c) for c in absent]),
    }


def measure(data_dir: Path, splits: Sequence[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"tuned_on": TUNING_SPLIT}
    for split in splits:
        records = load(data_dir, split)
        unreferenced = sum(1 for r in records if not r["references"])
        with tempfile.TemporaryDirectory(prefix=f"real-answers-{split}-") as work:
            result[split] = measure_split(claims_of(records), unreferenced, Path(work))
    result["targets"] = {
        "claim_false_flags": TARGET_CLAIM_FALSE_FLAGS,
        "whole_answer_false_flags": TARGET_WHOLE_FALSE_FLAGS,
        "catch_rate": TARGET_CATCH_RATE,
    }
    return result


def summary(result: dict[str, Any]) -> str:
    lines = [f"real answers (AttributionBench; rules tuned on {result['tuned_on']} only)"]
    for split in SPLITS:
        if split not in result:
            continue
        r = result[split]
        lines.append(
            f"  {split}: {r['claims']} claims ({r['without_references']} without references, "
            f"{r['not_packed']} not packed)"
        )
        for scope in SCOPES:
            s = r[scope]
            lines.append(
                f"    {scope:<8} false flags {s['false_flag_rate']:.4f} of {s['attributable']} "
                f"{s['false_flags_by_check']}; whole answers {s['whole_false_flag_rate']:.4f} "
                f"of {s['whole_answers']}; catch {s['catch_rate']:.4f} of {s['reachable']} "
                f"reachable; unreachable {s['unreachable']} of {s['not_attributable']}"
            )
            kinds = {k: v["n"] for k, v in s["false_flags_by_kind"].items()}
            lines.append(f"    {'':<8} false flags by kind {kinds}")
            n = s["names_supported"]
            lines.append(
                f"    {'':<8} names_supported (reported only): false flags {n['false_flags']} "
                f"({n['false_flag_rate']:.4f}); caught {n['caught_not_attributable']} of "
                f"{s['not_attributable']} wrong, {n['catch_rate_name_absent']:.4f} of the "
                f"{n['name_absent']} with a name absent"
            )
    return "\n".join(lines)


def met(ok: bool) -> str:
    """A target's verdict in a report table."""
    return "met" if ok else "missed"


def _flag_kind_rows(result: dict[str, Any]) -> list[str]:
    """One report row per split, scope and `FALSE_FLAG_KINDS` kind of false flag."""
    rows = []
    for split in (s for s in SPLITS if s in result):
        for scope in SCOPES:
            for kind, v in result[split][scope]["false_flags_by_kind"].items():
                shown = [e.replace("|", "/").replace("\n", " ")[:160] for e in v["examples"][:2]]
                rows.append(
                    f"| {split} | {scope} | {FALSE_FLAG_KINDS[kind]} | {v['n']} "
                    f"({v['share']:.0%}) | {'<br>'.join(shown)} |"
                )
    return rows


def report_section(result: dict[str, Any]) -> list[str]:
    """The real-answer part of REPORT.md's verification section."""
    targets = result["targets"]
    rows, sources, kinds, names = [], [], [], []
    for split in SPLITS:
        if split not in result:
            continue
        r = result[split]
        for scope in SCOPES:
            s = r[scope]
            claim_target = (
                split == TUNING_SPLIT or s["false_flag_rate"] <= targets["claim_false_flags"]
            )
            rows.append(
                f"| {split} | {scope} | {s['attributable']} | {s['false_flag_rate']:.4f} "
                f"({'tuning split' if split == TUNING_SPLIT else met(claim_target)}) | "
                f"{s['false_flags_by_check'] or 'none'} | {s['whole_answers']} | "
                f"{s['whole_false_flag_rate']:.4f} | {s['reachable']} | {s['catch_rate']:.4f} | "
                f"{s['unreachable']} of {s['not_attributable']} |"
            )
            sources += [
                f"| {split} | {scope} | {name} | {v['n']} | {v['rate']:.4f} |"
                for name, v in s["false_flags_by_source"].items()
            ]
            n = s["names_supported"]
            names.append(
                f"| {split} | {scope} | {n['false_flags']} ({n['false_flag_rate']:.4f}) | "
                f"{n['caught_not_attributable']} of {s['not_attributable']} | "
                f"{n['catch_rate_name_absent']:.4f} of {n['name_absent']} |"
            )
        kinds += [
            f"| {split} | {kind} | {n} |"
            for kind, n in r["citation"]["unreachable_by_kind"].items()
        ]
    return [
        "### Real model answers",
        "",
        f"AttributionBench claims (rules tuned on `{result['tuned_on']}` only), packed by "
        "`evpack batch` and verified by `evpack verify` in both scopes. Targets: false flags "
        f"<= {targets['claim_false_flags']} on attributable claims, <= "
        f"{targets['whole_answer_false_flags']} on whole answers, catch rate >= "
        f"{targets['catch_rate']} on the reachable not-attributable claims.",
        "",
        "| split | scope | attributable | false flags | by check | whole answers | whole "
        "false flags | reachable wrong | caught | unreachable wrong |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "| split | scope | source | attributable | false flags |",
        "|---|---|---|---|---|",
        *sources,
        "",
        "`names_supported` (reported, not gating by default): false flags on attributable "
        "claims, not-attributable claims it flags, and its catch rate on those with a name "
        "absent from the references (the rough kind below).",
        "",
        "| split | scope | false flags | flags wrong claims | caught, a name absent |",
        "|---|---|---|---|---|",
        *names,
        "",
        "Why supported claims were flagged (`false_flag_kind`; the share of the scope's false "
        "flags), with examples of each:",
        "",
        "| split | scope | kind | false flags | examples |",
        "|---|---|---|---|---|",
        *_flag_kind_rows(result),
        "",
        "| split | not attributable, no check reaches it, roughly | claims |",
        "|---|---|---|",
        *kinds,
        "",
        __doc__.split("\n\n", 2)[2].strip(),
        "",
    ]
