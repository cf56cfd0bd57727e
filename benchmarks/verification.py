"""Verification of answers: recall per fault class, false flags per answer style, and speed.

    python -m benchmarks.verification --data-dir ../shared/data [--limit 500] [--wall 10000] \
        [--real-splits dev test500 test_ood]

Two benches: answers written from templates (this module), and real model answers
(`benchmarks.real_answers`, AttributionBench claims judged by people), whose
figures go into the same `verification.json` under `real_answers`.

Answer sets are built from every eval data set (HotpotQA, RAMDocs,
MultiHop-RAG, ConflictNQ), packed by our packer (1,024 evidence tokens). A
correct answer per request cites, for each packed gold passage (HotpotQA
supporting paragraphs, RAMDocs correct documents, MultiHop-RAG evidence
facts, the ConflictNQ real passage; the first block when none is packed),
its first sentence and its first sentence stating a figure or date, taken
verbatim; both sides of each flagged conflict (a sentence of each, and a
statement of the conflict citing any side no sentence could be taken from);
a declaration for each uncovered facet; an abstention for an empty packet.

That answer is then written in each style a person or a model writes
(`STYLES`; a style that finds nothing to restyle in an answer is not
counted for it): the same dates as `7/22/2020`, `22/7/2020`, `22.07.2020`,
`7/22/20`, `Dec. 12, 2019`, `22nd of July 2020`, `22. Juli 2020`, `2020年7月22日`; figures with
scale suffixes (`3.5M`, `1k`, `3.5bn`, `2 million`), with and without digit
groups, groups of dots, spaces or apostrophes, a decimal comma, percent spelled
or signed, in digits where the evidence spells them
(`third`: `3rd`); the figure in a Chinese or a German sentence; every
phrasing of "not covered" in `ABSTENTIONS`; abbreviations (`U.S.`, `e.g.`,
`Dr.`, `No.`, `St.`, after a quote mark) between a figure and its citation;
quoted phrases; citations as ranges, lists, in parentheses, after the full
stop; bullet lists; a hedging sentence. Each correct answer is also mutated
once per fault class that applies (`CLASSES`, and the check that must catch
it): a label one past the last, a figure or date (as words, numeric, or
abbreviated) no cited block holds, a changed scale (`3.5M` -> `3.5bn`), a
changed figure in a Chinese or a German sentence, a figure cited to another block of
the packet that does not hold it, a sentence's citations removed, every
citation removed, a range over labels that do not exist or reversed, a side
of a conflict dropped, an uncovered facet answered, another request's
evidence id, an empty or blank answer.

Every answer is then a result line in each format (OpenAI, Anthropic,
Vertex, Bedrock with an Anthropic model and as Converse, plain) read back
by `packer.verification.answers`; the API failure classes (`errored`, a success without
text) exist in the five API formats. A row's
outcome depends only on its status, text and packet, so each distinct text
is checked once per packet. Recall of a class is the share of its answers
failing the check meant to catch it (for API failures: not passing); the
false-flag rate is the share of correct answers failing any check, overall
and per style. Speed: `verify_answer` over every distinct answer in one
process, the best of `--repeats` passes (the first warms the per-block text
facts, memoized as in a run; the packet's memo of answer sentences is emptied before each
pass, so a sentence is read once per packet and pass, as a run reads the answers of one
request), in CPU seconds of that process: answers per
second of one core, which the other jobs of a shared machine hardly move
(its load average is recorded beside). Wall time: `evpack verify` as a command (`python -m
pipelines.cli verify`, local runner) over `--wall` answers in all six
formats against a run directory written from the packed requests.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks import real_answers
from benchmarks.adapters import (
    DEFAULT_DATA_DIR,
    EVAL_TIME,
    catalog_documents,
    conflict_nq_cases,
    hotpotqa_cases,
    multihop_cases,
    ramdocs_cases,
)
from benchmarks.real_answers import met
from packer import Catalog, PackerRuntime, pack_request
from packer.verification.answer_sentences import cited_labels, split_sentences
from packer.verification.answers import parse_answer_line, parse_prompt_line
from packer.verification.checks import GivenPacket, verify_answer
from packer.verification.claims import parse_answer
from packer.verification.figures import text_figures
from schemas import ManifestRow, PackingConfig, Request
from schemas.arrow import arrow_schema
from schemas.prompt_formats import FORMATS, format_line
from schemas.prompt_formats.vertex_batch import ID_LABEL

DEFAULT_RESULTS = Path(__file__).resolve().parent / "results"
EVIDENCE_BUDGET = 1024
CLASSES: dict[str, str] = {
    "unknown_label": "labels_exist",
    "changed_figure": "figures_supported",
    "changed_date": "figures_supported",
    "changed_numeric_date": "figures_supported",
    "changed_abbreviated_date": "figures_supported",
    "changed_scale": "figures_supported",
    "changed_cjk_figure": "figures_supported",
    "changed_german_figure": "figures_supported",
    "misattributed_figure": "figures_supported",
    "uncited_factual": "factual_sentences_cited",
    "no_citation": "cites_evidence",
    "overlong_range": "labels_exist",
    "reversed_range": "labels_exist",
    "conflict_side_dropped": "conflicts_reported",
    "uncovered_answered": "uncovered_facets_declared",
    "leaked_id": "no_leaked_ids",
    "empty_answer": "answered",
    "blank_answer": "answered",
    "api_errored": "status",
    "api_no_content": "status",
}
"""Each fault class and the check that must catch it (`status`: the row is an API failure)."""
ANSWER_FORMATS = (
    "openai_batch",
    "anthropic_batch",
    "vertex_batch",
    "bedrock_batch",
    "bedrock_converse_batch",
    "plain",
)
API_FAILURES = ("api_errored", "api_no_content")
TARGET_RECALL = 0.99
TARGET_FALSE_FLAGS = 0.01
TARGET_FALSE_FLAGS_PER_STYLE = 0.03
TARGET_ANSWERS_PER_S = 5_000


@dataclass(frozen=True)
class Case:
    """One packed request: its packet, and the evidence ids that are gold."""

    dataset: str
    packet: GivenPacket
    gold_labels: tuple[str, ...]
    label_of: dict[str, str]


@dataclass(frozen=True)
class Packed:
    """The packed eval requests: cases, the run's ids, and what a run directory holds."""

    cases: list[Case]
    run_ids: frozenset[str]
    manifests: list[ManifestRow]
    prompt_lines: list[str]


def _cases(data_dir: Path, limit: int | None) -> Iterator[tuple[str, Request, frozenset[str]]]:
    for c in hotpotqa_cases(data_dir, limit):
        yield "hotpotqa", c.request, c.supporting
    for r in ramdocs_cases(data_dir, limit):
        yield "ramdocs", r.request, r.correct
    for m in multihop_cases(data_dir, limit):
        yield "multihop_rag", m.request, m.evidence
    for q in conflict_nq_cases(data_dir, limit):
        yield "conflict_nq", q.request, frozenset({q.real})


def packed_cases(data_dir: Path, limit: int | None) -> Packed:
    """Every request packed, as packets; the run's evidence and document ids; its files."""
    raw = list(_cases(data_dir, limit))
    catalog = Catalog(catalog_documents([r for _, r, _ in raw]))
    config = PackingConfig(max_evidence_tokens=EVIDENCE_BUDGET)
    runtime = PackerRuntime.load()
    cases, run_ids, manifests, prompt_lines = [], set(), [], []
    for dataset, request, gold in raw:
        result = pack_request(request, catalog, config, runtime, EVAL_TIME)
        manifest = result.manifest
        line = format_line(result.prompt, 0, "openai_batch")
        blocks = parse_prompt_line(line).blocks
        own = {e.evidence_id for e in manifest.evidence} | {
            e.document_id for e in manifest.evidence
        }
        run_ids |= {c.evidence_id for c in request.candidates}
        run_ids |= {c.document_id for c in request.candidates if c.document_id}
        packet = GivenPacket(
            request_id=request.request_id,
            blocks=blocks,
            conflicts=tuple(tuple(c.labels) for c in manifest.conflicts if len(c.labels) >= 2),
            uncovered=tuple(manifest.uncovered_facets),
            own_ids=frozenset(own),
        )
        label_of = {e.evidence_id: e.label for e in manifest.evidence}
        gold_labels = tuple(label_of[e] for e in sorted(gold) if e in label_of)
        cases.append(Case(dataset, packet, gold_labels, label_of))
        manifests.append(manifest)
        prompt_lines.append(line)
    return Packed(cases, frozenset(run_ids), manifests, prompt_lines)


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
_ABBREVIATED = ["Jan.", "Feb.", "Mar.", "Apr.", "May", "June", "July", "Aug.", "Sept.", "Oct.",
                "Nov.", "Dec."]  # fmt: skip
_GERMAN = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
           "Oktober", "November", "Dezember"]  # fmt: skip
_MONTH = "(" + "|".join(_MONTHS) + ")"
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DMY = re.compile(rf"\b(\d{{1,2}}) {_MONTH} (\d{{4}})\b")
_MDY = re.compile(rf"\b{_MONTH} (\d{{1,2}}), (\d{{4}})\b")
DateReader = Callable[[re.Match[str]], date]
DateWriter = Callable[[date], str]
_DATES: tuple[tuple[re.Pattern[str], DateReader, DateWriter], ...] = (
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


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


DATE_STYLES: dict[str, DateWriter] = {
    "date_numeric_mdy": lambda d: f"{d.month}/{d.day}/{d.year}",
    "date_numeric_dmy": lambda d: f"{d.day}/{d.month}/{d.year}",
    "date_numeric_dotted": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    "date_numeric_short_year": lambda d: f"{d.month}/{d.day}/{d.year % 100:02d}",
    "date_abbreviated_month": lambda d: f"{_ABBREVIATED[d.month - 1]} {d.day}, {d.year}",
    "date_ordinal_of": lambda d: f"the {_ordinal(d.day)} of {_MONTHS[d.month - 1]} {d.year}",
    "date_german_ordinal": lambda d: f"{d.day}. {_GERMAN[d.month - 1]} {d.year}",
    "date_cjk": lambda d: f"{d.year}年{d.month}月{d.day}日",
}
"""Ways to write a date that the evidence writes in words or ISO."""


def _replaced(sentences: list[str], i: int, new: str) -> list[str]:
    return [*sentences[:i], new, *sentences[i + 1 :]]


def _cited(sentences: list[str]) -> list[int]:
    return [i for i, s in enumerate(sentences) if _LABEL.search(s)]


def _redate(
    sentences: list[str], write: DateWriter, shift: int = 0, years: range = range(1, 10000)
) -> list[str] | None:
    """The answer with the first full date of a citing sentence rewritten (`shift` days on);
    None when there is none, or it is not in `years` (nobody writes 1892 as `92`)."""
    for i in _cited(sentences):
        for pattern, read, _ in _DATES:
            match = pattern.search(sentences[i])
            if match is None:
                continue
            try:
                day = read(match) + timedelta(days=shift)
            except (ValueError, OverflowError):
                return None
            if day.year not in years:
                return None
            s = sentences[i]
            return _replaced(sentences, i, s[: match.start()] + write(day) + s[match.end() :])
    return None


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


def _cited_blocks(sentence: str, packet: GivenPacket) -> list[str]:
    return [packet.blocks[f"E{n}"] for n in _LABEL.findall(sentence) if f"E{n}" in packet.blocks]


def _absent_number(value: int, sentence: str, packet: GivenPacket) -> int:
    """`value`, raised until no block the sentence cites holds it."""
    cited = " ".join(_cited_blocks(sentence, packet)).replace(",", "")
    while re.search(rf"(?<![\d,.]){value}(?![\d])", cited):
        value += 1
    return value


def _changed_figure(sentence: str, packet: GivenPacket) -> str | None:
    """The sentence with a plain number (not in a date) raised until no cited block holds it."""
    body = _LABEL.sub("", sentence)
    if any(pattern.search(body) for pattern, _, _ in _DATES):
        return None
    match = _NUMBER.search(body)
    if match is None:
        return None
    value = _absent_number(int(match[0]) + 1, sentence, packet)
    return sentence[: match.start()] + str(value) + sentence[match.end() :]


_SCALED = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?) (thousand|million|billion)\b")
_GROUPED = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,]|\.\d)")
_EXPONENTS = {"thousand": 3, "million": 6, "billion": 9}
SUFFIXES = {3: ("k", "K", " thousand"), 6: ("M", " million", "mn"), 9: ("bn", "B", " billion")}
"""Scale suffixes by power of ten, as answers write them; a style takes one by the case."""


def _short(value: Decimal, pick: int, bump: bool) -> str | None:
    """A value of 1,000 or more as mantissa and suffix ("3.5M"); `bump`: a scale too large."""
    for exponent in (9, 6, 3):
        mantissa = value / Decimal(10) ** exponent
        if mantissa >= 1 and mantissa == mantissa.quantize(Decimal("0.01")):
            written = exponent if not bump else (6 if exponent == 9 else exponent + 3)
            suffixes = SUFFIXES[written]
            return f"{format(mantissa.normalize(), 'f')}{suffixes[pick % len(suffixes)]}"
    return None


def _rescale(sentences: list[str], pick: int, bump: bool = False) -> list[str] | None:
    """The answer with a figure of a citing sentence written with a scale suffix."""
    for i in _cited(sentences):
        s = sentences[i]
        for match in [*_SCALED.finditer(s), *_GROUPED.finditer(s)]:
            if match.re is _SCALED:
                value = Decimal(match[1]) * Decimal(10) ** _EXPONENTS[match[2]]
            else:
                value = Decimal(match[0].replace(",", ""))
            short = _short(value, pick, bump)
            if short is not None:
                return _replaced(sentences, i, s[: match.start()] + short + s[match.end() :])
    return None


GROUP_SEPARATORS = ("", ".", " ", "\u00a0", "'")
"""How a figure's digit groups are written instead of commas: not at all, or as in other
locales ("4.000", "4 000", "4'000")."""
_DECIMAL = re.compile(r"(?<![\w.,])\d+\.\d{1,2}(?![\w.,]*\d)")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)(?:%| percent\b| per cent\b)")
_PLAIN_BIG = re.compile(r"(?<![\w.,])[1-9]\d{4,}(?![\w.,]*\d)")


def _reformat_number(sentences: list[str], pick: int) -> list[str] | None:
    """The answer with a figure's digit groups or percent sign written the other way."""
    for i in _cited(sentences):
        s = sentences[i]
        if m := _PERCENT.search(s):
            other = (f"{m[1]} percent", f"{m[1]}%", f"{m[1]} per cent")[pick % 3]
            if other != m[0]:
                return _replaced(sentences, i, s[: m.start()] + other + s[m.end() :])
        if m := _GROUPED.search(s):
            other = m[0].replace(",", GROUP_SEPARATORS[pick % len(GROUP_SEPARATORS)])
            return _replaced(sentences, i, s[: m.start()] + other + s[m.end() :])
        if m := _PLAIN_BIG.search(_LABEL.sub("    ", s)):
            return _replaced(sentences, i, s[: m.start()] + f"{int(m[0]):,}" + s[m.end() :])
        if m := _DECIMAL.search(_LABEL.sub("    ", s)):
            return _replaced(sentences, i, s[: m.start()] + m[0].replace(".", ",") + s[m.end() :])
    return None


_SPELLED_WORDS = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                  "eleven", "twelve"]  # fmt: skip
_SPELLED_ORDINALS = ["third", "fourth", "fifth", "sixth", "seventh", "eighth",
                     "ninth", "tenth"]  # fmt: skip
_SPELLED = re.compile(rf"(?<![-\w])({'|'.join(_SPELLED_WORDS + _SPELLED_ORDINALS)})(?![-\w])")


def _digits(sentences: list[str]) -> list[str] | None:
    """The answer with a number its evidence spells out written in digits ("third": "3rd")."""
    for i in _cited(sentences):
        s = sentences[i]
        if '"' not in s and (m := _SPELLED.search(s)):  # a quoted phrase stays verbatim
            word = m[1]
            if word in _SPELLED_WORDS:
                digits = str(_SPELLED_WORDS.index(word) + 2)
            else:
                digits = _ordinal(_SPELLED_ORDINALS.index(word) + 3)
            return _replaced(sentences, i, s[: m.start()] + digits + s[m.end() :])
    return None


SENTENCES_IN = {
    "cjk": "资料显示，相关数字是{figure}{labels}。",
    "german": "Den Quellen zufolge beträgt die maßgebliche Zahl {figure}{labels}.",
}
"""A factual sentence said in another language: "the figure is N", with its citations. The
German one puts the figure after a capitalised noun, as German writes every noun."""


def _translated(
    sentences: list[str], packet: GivenPacket, change: bool, language: str
) -> list[str] | None:
    """A citing sentence's first figure said in `language` (`SENTENCES_IN`); `change`: a
    figure no cited block holds instead."""
    for i in _cited(sentences):
        numbers = [f for f in parse_answer(sentences[i])[0].facts if f.kind == "number"]
        if not numbers:
            continue
        written = numbers[0].text.strip()
        if change:
            digits = written.replace(",", "")
            if not digits.isdigit():
                continue
            written = str(_absent_number(int(digits) + 1, sentences[i], packet))
        labels = "".join(f"[E{n}]" for n in _LABEL.findall(sentences[i]))
        said = SENTENCES_IN[language].format(figure=written, labels=labels)
        return _replaced(sentences, i, said)
    return None


def _held(value: str, text: str) -> bool:
    """Whether `text` writes the integer `value` as digits (groups ignored) or spells it."""
    if re.search(rf"(?<![\d.]){value}(?!\d)", text.replace(",", "")):
        return True
    return value in text_figures(text).numbers


def _misattributed(sentences: list[str], packet: GivenPacket) -> list[str] | None:
    """A citing sentence whose plain figure its cited block holds, cited instead to another
    block of the packet that does not hold it (nor does the prompt outside the evidence)."""
    for i in _cited(sentences):
        body = _LABEL.sub("", sentences[i])
        match = _NUMBER.search(body)
        if match is None or any(pattern.search(body) for pattern, _, _ in _DATES):
            continue
        value = str(int(match[0]))
        cited = set(_LABEL.findall(sentences[i]))
        if _held(value, packet.given) or not any(
            _held(value, b) for b in _cited_blocks(sentences[i], packet)
        ):
            continue
        for label, text in packet.blocks.items():
            if label[1:] not in cited and not _held(value, text):
                s, first = sentences[i], _LABEL.search(sentences[i])
                assert first is not None
                moved = s[: first.start()] + f"[{label}]" + _LABEL.sub("", s[first.end() :])
                return _replaced(sentences, i, moved)
    return None


ABSTENTIONS = (
    "I could not find anything about {x}.",
    "The documents are silent on {x}.",
    "There is no information about {x} in the sources.",
    "None of the sources mention {x}.",
    "The evidence does not address {x}.",
    "{X} is not covered by the documents.",
    "I was unable to find {x} in the provided documents.",
    "The sources say nothing about {x}.",
    "There's no mention of {x} in the evidence.",
    "The provided context lacks information on {x}.",
    "{X}: not stated in the sources.",
    "Regarding {x}, the documents provide no details.",
    "I couldn't find any details on {x}.",
    "The passages don't say anything about {x}.",
    "Unfortunately, {x} is not mentioned in the sources.",
    "{X} is unknown from the given evidence.",
    "The records do not specify {x}.",
    "Information about {x} is not available in the documents.",
)
"""How answers say the evidence does not hold something, as a style of a correct answer."""


def _abstaining(sentences: list[str], packet: GivenPacket, pick: int) -> list[str] | None:
    """The answer with each facet declaration (or its abstention) said another way."""
    if not packet.uncovered and packet.blocks:
        return None
    topics = packet.uncovered or ("this question",)
    out = [s for s in sentences if not s.startswith(("The sources do not c",))]
    for n, facet in enumerate(topics):
        phrase = ABSTENTIONS[(pick + n) % len(ABSTENTIONS)]
        out.append(phrase.format(x=facet, X=facet[:1].upper() + facet[1:]))
    return out


def _inserted(sentences: list[str], insert: str) -> list[str] | None:
    """The answer with `insert` put before the citations of its first factual citing sentence."""
    for i in _cited(sentences):
        s = sentences[i]
        if not parse_answer(s)[0].facts:
            continue
        at = _LABEL.search(s)
        assert at is not None
        return _replaced(sentences, i, s[: at.start()].rstrip() + insert + " " + s[at.start() :])
    return None


def _recite(sentences: list[str], packet: GivenPacket, form: str) -> list[str] | None:
    """The answer with its first citation written as a range, a list or in parentheses."""
    labels = sorted(packet.blocks, key=lambda label: int(label[1:]))
    for i in _cited(sentences):
        s = sentences[i]
        match = _LABEL.search(s)
        assert match is not None
        n = int(match[1])
        if form == "range":
            other = n + 1 if f"E{n + 1}" in packet.blocks else n - 1
            if other < 1:
                return None
            new = f"[E{min(n, other)}-E{max(n, other)}]"
        elif form == "list":
            new = f"[{', '.join(dict.fromkeys([f'E{n}', labels[0]]))}]"
        else:
            new = f"(E{n})"
        return _replaced(sentences, i, s[: match.start()] + new + s[match.end() :])
    return None


def _after_stop(sentences: list[str]) -> list[str] | None:
    moved = [re.sub(r"\s*((?:\[E\d+\]\s*)+)\.$", r". \1", s).rstrip() for s in sentences]
    return moved if moved != sentences else None


def _quoted(sentences: list[str]) -> list[str] | None:
    """The answer quoting five words of a citing sentence, as the evidence has them."""
    for i in _cited(sentences):
        words = _LABEL.sub("", sentences[i]).split()
        if len(words) >= 8 and not any('"' in w or "“" in w for w in words[1:6]):
            span = " ".join(words[1:6]).strip(",;:")
            labels = "".join(f"[E{n}]" for n in _LABEL.findall(sentences[i]))
            quote = f'In the source\'s words, "{span}" {labels}.'
            return [*sentences[: i + 1], quote, *sentences[i + 1 :]]
    return None


Style = Callable[[Case, list[str], int], list[str] | None]
SHORT_YEARS = range(1930, 2030)
"""Years an answer writes with two digits (`7/22/20`): this century and the last decades
of the one before, where the reading 19xx or 20xx is told by the evidence."""


def _date_style(write: DateWriter, name: str) -> Style:
    years = SHORT_YEARS if name == "date_numeric_short_year" else range(1, 10000)
    return lambda case, sentences, n: _redate(sentences, write, years=years)


STYLES: dict[str, Style] = {
    "as_taken": lambda c, s, n: s,
    **{name: _date_style(write, name) for name, write in DATE_STYLES.items()},
    "scale_suffix": lambda c, s, n: _rescale(s, n),
    "number_format": lambda c, s, n: _reformat_number(s, n),
    "spelled_number_as_digits": lambda c, s, n: _digits(s),
    "cjk_sentence": lambda c, s, n: _translated(s, c.packet, False, "cjk"),
    "german_sentence": lambda c, s, n: _translated(s, c.packet, False, "german"),
    "not_covered_phrasing": lambda c, s, n: _abstaining(s, c.packet, n),
    "hedge_sentence": lambda c, s, n: (
        [*s, "The sources say nothing further on this."] if c.packet.blocks else None
    ),
    "abbreviations": lambda c, s, n: _inserted(
        s, ", as the U.S. Dept. of State and Dr. Li (e.g. No. Ten, St. Louis) note"
    ),
    "abbreviation_after_quote_mark": lambda c, s, n: _inserted(
        s, ", per ‘Dr. Smith’ and 'Mr. Jones of the U.K.'"
    ),
    "quotes": lambda c, s, n: _quoted(s),
    "citation_range": lambda c, s, n: _recite(s, c.packet, "range"),
    "citation_list": lambda c, s, n: _recite(s, c.packet, "list"),
    "citation_parenthesized": lambda c, s, n: _recite(s, c.packet, "parentheses"),
    "citation_after_full_stop": lambda c, s, n: _after_stop(s),
    "bullet_list": lambda c, s, n: ["\n- ".join(["Answer:", *s])] if len(s) > 1 else None,
}
"""Each style of a correct answer: the answer restyled, or None when it has nothing to restyle."""


def mutants(
    case: Case, sentences: list[str], other_id: str, pick: int
) -> Iterator[tuple[str, list[str]]]:
    """Each fault class that applies, as (class, mutated sentences)."""
    packet = case.packet
    cited = _cited(sentences)
    if cited:
        i = cited[0]
        unknown = f"[E{len(packet.blocks) + 1}]"
        yield "unknown_label", _replaced(sentences, i, _LABEL.sub(unknown, sentences[i], 1))
        yield "overlong_range", _replaced(sentences, i, _LABEL.sub("[E1-E400]", sentences[i], 1))
        last = max(int(label[1:]) for label in packet.blocks)
        if last >= 2:
            reversed_range = f"[E{last}-E1]"
            yield (
                "reversed_range",
                _replaced(sentences, i, _LABEL.sub(reversed_range, sentences[i], 1)),
            )
        without = [_LABEL.sub("", s).replace(" .", ".") for s in sentences]
        yield "no_citation", [s for s in without if not s.startswith("The sources conflict")]
    for kind, change in (
        ("changed_date", _changed_date),
        ("changed_figure", lambda s: _changed_figure(s, packet)),
    ):
        for i in cited:
            changed = change(sentences[i])
            if changed is not None and changed != sentences[i]:
                yield kind, _replaced(sentences, i, changed)
                break
    for kind, mutated in (
        ("changed_numeric_date", _redate(sentences, DATE_STYLES["date_numeric_mdy"], 1)),
        ("changed_abbreviated_date", _redate(sentences, DATE_STYLES["date_abbreviated_month"], 1)),
        ("changed_scale", _rescale(sentences, pick, bump=True)),
        ("changed_cjk_figure", _translated(sentences, packet, True, "cjk")),
        ("changed_german_figure", _translated(sentences, packet, True, "german")),
        ("misattributed_figure", _misattributed(sentences, packet)),
    ):
        if mutated is not None:
            yield kind, mutated
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
    yield "empty_answer", [""]
    yield "blank_answer", [" \n "]


@dataclass(frozen=True)
class AnswerCase:
    """One answer of the set: its case, its class ("correct" or a fault) and style, its text;
    `uncovered`: facets the answer's packet lists as uncovered beyond the case's own."""

    case: int
    kind: str
    style: str
    text: str
    uncovered: tuple[str, ...] = ()


TOPICS = (
    "return shipping",
    "the warranty period",
    "side effects",
    "the author's age",
    "ticket prices",
    "the sequel",
    "the exact cost",
    "later events",
)
"""Facets a packet with evidence is told to lack, so that every case has a "not covered"
declaration to phrase (the eval sets flag few facets as uncovered)."""


def _facet_answers(n: int, case: Case, sentences: list[str]) -> Iterator[AnswerCase]:
    """A facet the evidence lacks, declared in one of `ABSTENTIONS`, and answered instead."""
    facet = TOPICS[n % len(TOPICS)]
    declared = _abstaining(sentences, replace(case.packet, uncovered=(facet,)), n)
    assert declared is not None
    yield AnswerCase(n, "correct", "not_covered_phrasing", " ".join(declared), (facet,))
    claim = next(s for s in sentences if _LABEL.search(s))
    answered = f"As for {facet}, {claim[0].lower()}{claim[1:]}"
    yield AnswerCase(
        n, "uncovered_answered", "as_taken", " ".join([*sentences, answered]), (facet,)
    )


def build_answers(cases: Sequence[Case], run_ids: frozenset[str]) -> list[AnswerCase]:
    """Correct answers in every style that applies, and the faults of each."""
    answers = []
    ids = sorted(run_ids)
    for n, case in enumerate(cases):
        sentences = correct_answer(case)
        if not sentences:
            continue  # no block has a sentence a writer would take: no correct answer to write
        for style, restyle in STYLES.items():
            styled = restyle(case, sentences, n)
            if styled is not None:
                answers.append(AnswerCase(n, "correct", style, " ".join(styled)))
        other = next(i for i in ids[(n * 7919) % len(ids) :] + ids if i not in case.packet.own_ids)
        for kind, mutated in mutants(case, sentences, other, n):
            answers.append(AnswerCase(n, kind, "as_taken", " ".join(mutated)))
        for kind in API_FAILURES:
            answers.append(AnswerCase(n, kind, "as_taken", " ".join(sentences)))
        if case.packet.blocks and not case.packet.uncovered and _cited(sentences):
            answers.extend(_facet_answers(n, case, sentences))
    return answers


def result_line(fmt: str, request_id: str, text: str, failure: str | None = None) -> str | None:
    """One answer as a result line of `fmt` (`packer.verification.answers`), or None when
    `fmt` cannot carry that failure (plain lines have no API status)."""
    if fmt == "plain":
        return None if failure else json.dumps({"request_id": request_id, "answer": text})
    if fmt.startswith("openai"):
        response = {"status_code": 200, "body": _openai_body(fmt, text, failure)}
        error = {"code": "server_error", "message": "retry"} if failure == "api_errored" else None
        return json.dumps(
            {
                "id": "r",
                "custom_id": request_id,
                "response": None if error else response,
                "error": error,
            }
        )
    if fmt == "anthropic_batch":
        key = FORMATS["anthropic_batch"].request_key(request_id)
        if failure == "api_errored":
            result: dict[str, Any] = {"type": "errored", "error": {"type": "overloaded_error"}}
        else:
            content = [] if failure else [{"type": "text", "text": text}]
            result = {
                "type": "succeeded",
                "message": {"content": content, "stop_reason": "end_turn"},
            }
        return json.dumps({"custom_id": key, "result": result})
    if fmt.startswith("bedrock"):
        return _bedrock_line(fmt, request_id, text, failure)
    request = {"labels": {ID_LABEL: FORMATS["vertex_batch"].request_key(request_id)}}
    if failure == "api_errored":
        return json.dumps({"status": "RESOURCE_EXHAUSTED", "request": request})
    candidate: dict[str, Any] = {"finishReason": "SAFETY"}
    if not failure:
        candidate = {"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}
    return json.dumps({"status": "", "request": request, "response": {"candidates": [candidate]}})


def _openai_body(fmt: str, text: str, failure: str | None) -> dict[str, Any]:
    """A successful OpenAI response body: a chat completion, or a Responses API response
    (`openai_responses_batch`), each with the text or, for `api_no_content`, a refusal."""
    if fmt == "openai_batch":
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if failure == "api_no_content":
            message = {"role": "assistant", "content": None, "refusal": "I can't help."}
        return {"choices": [{"index": 0, "message": message}]}
    part = {"type": "output_text", "text": text, "annotations": []}
    if failure == "api_no_content":
        part = {"type": "refusal", "refusal": "I can't help."}
    item = {"type": "message", "role": "assistant", "status": "completed", "content": [part]}
    return {"object": "response", "status": "completed", "output": [item]}


def _bedrock_line(fmt: str, request_id: str, text: str, failure: str | None) -> str:
    """A Bedrock batch output record: the input echoed (an Anthropic body names its
    `anthropic_version`, a Converse one does not) with the model's output or an error."""
    converse = fmt == "bedrock_converse_batch"
    echoed: dict[str, Any] = {"messages": []}
    if not converse:
        echoed["anthropic_version"] = "bedrock-2023-05-31"
    line: dict[str, Any] = {
        "recordId": FORMATS["bedrock_batch"].request_key(request_id),
        "modelInput": echoed,
    }
    if failure == "api_errored":
        return json.dumps({**line, "error": {"errorCode": 429, "errorMessage": "throttled"}})
    if converse:
        reasoning = {"text": None, "reasoningContent": {"reasoningText": {"text": "hm"}}}
        blocks = [reasoning] if failure else [reasoning, {"text": text}]
        output = {"output": {"message": {"role": "assistant", "content": blocks}}}
    else:
        content = [] if failure else [{"type": "text", "text": text}]
        output = {"type": "message", "content": content, "stop_reason": "end_turn"}
    return json.dumps({**line, "modelOutput": output})


def _rate(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else 0.0


def measure(cases: Sequence[Case], run_ids: frozenset[str], repeats: int) -> dict[str, Any]:
    """Recall per class, false flags per style and format, and answers verified per second."""
    answers = build_answers(cases, run_ids)
    caught: dict[str, list[bool]] = defaultdict(list)
    flagged: dict[str, list[bool]] = defaultdict(list)
    by_format: dict[str, list[bool]] = defaultdict(list)
    false_flags: dict[str, int] = defaultdict(int)
    missed: dict[str, list[str]] = defaultdict(list)
    verdicts: dict[tuple[int, str, tuple[str, ...]], list[str]] = {}
    for a in answers:
        packet = cases[a.case].packet
        if a.uncovered:
            packet = replace(packet, uncovered=(*packet.uncovered, *a.uncovered))
        failure = a.kind if a.kind in API_FAILURES else None
        for fmt in ANSWER_FORMATS:
            line = result_line(fmt, packet.request_id, a.text, failure)
            if line is None:
                continue
            parsed = parse_answer_line(line)
            if parsed.status != "succeeded":
                failed = ["status"]
            else:
                key = (a.case, parsed.text, a.uncovered)
                if key not in verdicts:  # what fails the answer: names_supported only reports
                    verdict = verify_answer(parsed.text, packet, run_ids)
                    verdicts[key] = [n for n in verdict.failed if n not in verdict.advisory]
                failed = verdicts[key]
            if a.kind == "correct":
                flagged[a.style].append(bool(failed))
                by_format[fmt].append(bool(failed))
                for name in failed:
                    false_flags[name] += 1
                if failed and len(missed[a.style]) < 3 and fmt == "plain":
                    missed[a.style].append(f"{failed}: {a.text[:300]}")
                continue
            hit = CLASSES[a.kind] in failed
            caught[a.kind].append(hit)
            if not hit and len(missed[a.kind]) < 3:
                missed[a.kind].append(f"{failed}: {a.text[:300]}")
    texts = sorted({(a.case, a.text) for a in answers})
    best = float("inf")
    for _ in range(repeats):
        for case in cases:
            case.packet.sentences.clear()  # each pass reads a sentence once per packet, as a run
        started = time.process_time()
        for n, text in texts:
            verify_answer(text, cases[n].packet, run_ids)
        best = min(best, time.process_time() - started)
    correct = [flag for flags in flagged.values() for flag in flags]
    return {
        "requests": len(cases),
        "datasets": sorted({c.dataset for c in cases}),
        "answers": sum(len(v) for v in caught.values()) + len(correct),
        "distinct_texts": len(texts),
        "recall": {k: {"n": len(v), "recall": _rate(v)} for k, v in sorted(caught.items())},
        "correct_answers": len(correct),
        "false_flag_rate": _rate(correct),
        "false_flags_by_style": {
            k: {"n": len(v), "rate": _rate(v)} for k, v in sorted(flagged.items())
        },
        "false_flags_by_format": {
            k: {"n": len(v), "rate": _rate(v)} for k, v in sorted(by_format.items())
        },
        "false_flags_by_check": dict(sorted(false_flags.items())),
        "answers_per_s": len(texts) / best,
        "load_average": os.getloadavg()[0],
        "examples_missed": {k: v for k, v in missed.items() if v},
        "targets": {
            "recall": TARGET_RECALL,
            "false_flag_rate": TARGET_FALSE_FLAGS,
            "false_flag_rate_per_style": TARGET_FALSE_FLAGS_PER_STYLE,
            "answers_per_s": TARGET_ANSWERS_PER_S,
        },
    }


def write_run(packed: Packed, directory: Path) -> None:
    """A run directory as `evpack batch` writes one: prompt lines and manifests."""
    (directory / "prompts").mkdir(parents=True)
    (directory / "manifests").mkdir()
    (directory / "prompts" / "prompts-00000-of-00001.jsonl").write_text(
        "".join(f"{line}\n" for line in packed.prompt_lines)
    )
    rows = [m.model_dump(mode="python") for m in packed.manifests]
    table = pa.Table.from_pylist(rows, schema=arrow_schema(ManifestRow))
    pq.write_table(table, directory / "manifests" / "manifests-00000-of-00001.parquet")


def wall_time(packed: Packed, count: int) -> dict[str, Any]:
    """`evpack verify` as a command over `count` answers (every format, good and bad)."""
    answers = build_answers(packed.cases, packed.run_ids)
    with tempfile.TemporaryDirectory(prefix="verify-wall-") as work:
        run = Path(work) / "run"
        write_run(packed, run)
        lines: list[str] = []
        n = 0
        while len(lines) < count:
            a = answers[n % len(answers)]
            fmt = ANSWER_FORMATS[n % len(ANSWER_FORMATS)]
            failure = a.kind if a.kind in API_FAILURES else None
            line = result_line(fmt, packed.cases[a.case].packet.request_id, a.text, failure)
            if line is not None:
                lines.append(line)
            n += 1
        answers_file = Path(work) / "answers.jsonl"
        answers_file.write_text("".join(f"{line}\n" for line in lines))
        argv = [sys.executable, "-m", "pipelines.cli", "verify", f"--answers={answers_file}"]
        argv += [f"--run={run}", "--max_failed=100%"]
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ))
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"evpack verify failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"answers": count, "seconds": seconds, "answers_per_s": count / seconds}


def summary(result: dict[str, Any]) -> str:
    lines = [
        f"verification: {result['requests']} requests ({', '.join(result['datasets'])}), "
        f"{result['answers']} answers in {len(ANSWER_FORMATS)} formats"
    ]
    for name, r in result["recall"].items():
        lines.append(f"  recall {name:<26} {r['recall']:.4f} (n={r['n']})")
    lines.append(
        f"  false flags on {result['correct_answers']} correct answers: "
        f"{result['false_flag_rate']:.4f} {result['false_flags_by_check']}"
    )
    for name, r in result["false_flags_by_style"].items():
        lines.append(f"    style {name:<30} {r['rate']:.4f} (n={r['n']})")
    lines.append(f"  checks {result['answers_per_s']:,.0f} answers per CPU second (one core)")
    if "wall" in result:
        wall = result["wall"]
        lines.append(
            f"  evpack verify: {wall['answers']:,} answers in {wall['seconds']:.1f} s "
            f"({wall['answers_per_s']:,.0f} answers/s, local runner)"
        )
    return "\n".join(lines)


def report_section(result: dict[str, Any]) -> list[str]:
    """The verification section of REPORT.md."""
    targets = result["targets"]
    rows = [
        f"| `{name}` | `{CLASSES[name]}` | {r['n']} | {r['recall']:.4f} | "
        f"{met(r['recall'] >= targets['recall'])} |"
        for name, r in result["recall"].items()
    ]
    per_style = targets.get("false_flag_rate_per_style", TARGET_FALSE_FLAGS_PER_STYLE)
    styles = [
        f"| `{name}` | {r['n']} | {r['rate']:.4f} | {met(r['rate'] <= per_style)} |"
        for name, r in result.get("false_flags_by_style", {}).items()
    ]
    flags = result["false_flag_rate"]
    speed = result["answers_per_s"]
    wall = result.get("wall")
    wall_text = (
        f" `evpack verify` (the command, local runner, one run directory): "
        f"{wall['answers']:,} answers in {wall['seconds']:.1f} s."
        if wall
        else ""
    )
    return [
        "## Verification of answers",
        "",
        f"{result['requests']:,} requests packed ({', '.join(result.get('datasets', []))}), "
        f"{result['answers']:,} answers ({result['correct_answers']:,} correct, the rest one "
        "fault each), each in every result format. Reproduce: `make eval` (or `python -m "
        "benchmarks.verification`).",
        "",
        f"| fault class | check | answers | recall | target >= {targets['recall']} |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"False flags on correct answers: {flags:.4f} overall "
        f"({met(flags <= targets['false_flag_rate'])}, target <= "
        f"{targets['false_flag_rate']}; by check: {result['false_flags_by_check'] or 'none'}).",
        "",
        f"| correct-answer style | answers | false flags | target <= {per_style} |",
        "|---|---|---|---|",
        *styles,
        "",
        f"Checks: {speed:,.0f} answers per CPU second of one process "
        f"({met(speed >= targets['answers_per_s'])}, target >= "
        f"{targets['answers_per_s']:,} per core; load average "
        f"{result.get('load_average', 0):.1f} on this shared machine).{wall_text}",
        "",
        __doc__.split("\n\n", 2)[2].strip(),
        "",
        *(real_answers.report_section(result["real_answers"]) if "real_answers" in result else []),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, default=None, help="records per data set")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--wall", type=int, default=10_000, help="answers for the evpack verify wall time (0: none)"
    )
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument(
        "--real-splits",
        nargs="*",
        default=list(real_answers.SPLITS),
        choices=real_answers.SPLITS,
        help="splits of the real-answer bench (none: skip it)",
    )
    args = parser.parse_args(argv)
    packed = packed_cases(args.data_dir, args.limit)
    result = measure(packed.cases, packed.run_ids, args.repeats)
    if args.wall:
        result["wall"] = wall_time(packed, args.wall)
    if args.real_splits:
        result["real_answers"] = real_answers.measure(args.data_dir, args.real_splits)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "verification.json").write_text(json.dumps(result, indent=1) + "\n")
    print(summary(result))
    if "real_answers" in result:
        print(real_answers.summary(result["real_answers"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
