"""Figures an answer derives by arithmetic it writes out: "60 items * £10 = £600",
"12 + 30 equals 42", "25% of 400 is 100", and a percentage of two figures of the same
sentence ("120 of the 400 members (30%)").

The result is no figure of the evidence; it is `derived` (`packer.verification.checks`)
when the arithmetic holds, to the precision the result is written in, and every
operand is supported. Only arithmetic written out in one sentence counts:
rejected, trying every sum, product and ratio of the cited figures, which
would let almost any changed figure pass as a combination of others.
"""

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from packer.verification.figures import Fact, figure_facts

_NUM = r"[$£€¥₹]?\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|percent\b|per\s+cent\b))?"
_UNIT = r"(?:\s*/?\s*[^\W\d_][\w.]*){0,2}"
"""Up to two words (or a per-unit "/unit") after an operand: "60 items * £10/unit"."""
_OPERATION = re.compile(
    rf"(?P<a>{_NUM}){_UNIT}\s*(?P<op>[*×+/÷]|\s[x−–-]\s)\s*(?P<b>{_NUM}){_UNIT}"
    rf"\s*(?:=|equals?\b|gives\b|makes\b|comes\s+to\b|totals?\b)\s*(?P<c>{_NUM})"
)
_SHARE_OF = re.compile(
    rf"(?P<a>{_NUM})\s+of\s+(?:the\s+|a\s+|an\s+|its\s+|their\s+)?(?P<b>{_NUM}){_UNIT}"
    rf"\s*(?:=|is\b|are\b|was\b|were\b|equals?\b|,|:|\(|or\b|gives\b|comes\s+to\b)\s*(?:or\s+)?"
    rf"(?:about\s+|around\s+|roughly\s+|approximately\s+|some\s+)?(?P<c>{_NUM})"
)
_PERCENT = re.compile(r"%|percent|per\s+cent")
_OF_FIGURE = re.compile(r"\d\S*(?:\s+per\s?cent)?\s+of\s+(?:\w+\s+)?[$£€¥₹]?\s?\d")
"""A figure "of" a figure: the part of `_SHARE_OF` a sentence must have before it is tried."""
_RESULT_HINTS = ("=", "equal", "give", "make", "come", "total")
_RESULT = re.compile(r"=|\b(?:equals?|gives|makes|comes\s+to|totals?)\b")
"""Cheap tests first: most sentences have no result sign and no percentage, and the two
patterns above would each scan them from every digit."""


@dataclass(frozen=True)
class Derivation:
    """A figure an answer computed and the figures it computed it from."""

    result: Fact
    operands: tuple[Fact, ...]
    shown: str
    """The arithmetic as written, for the row ("60 items * £10 = £600")."""


def _fact(text: str) -> Fact | None:
    facts = [f for f in figure_facts(text) if f.kind == "number"]
    return facts[0] if len(facts) == 1 else None


def _value(fact: Fact) -> Decimal | None:
    try:
        return Decimal(fact.key)
    except InvalidOperation:
        return None


def _close(computed: Decimal, written: Fact) -> bool:
    """Whether `computed` rounds to the result as written (its last decimal place)."""
    value = _value(written)
    if value is None:
        return False
    places = len(written.key.partition(".")[2])
    return abs(computed - value) <= Decimal(5) / Decimal(10) ** (places + 1)


def _compute(op: str, a: Decimal, b: Decimal) -> Decimal | None:
    op = op.strip()
    if op in "*×x":
        return a * b
    if op == "+":
        return a + b
    if op in "−–-":
        return a - b
    return a / b if b else None


def _operation(m: re.Match[str]) -> Derivation | None:
    facts = [_fact(m[n]) for n in ("a", "b", "c")]
    if any(f is None for f in facts):
        return None
    a, b, c = facts
    values = [_value(f) for f in (a, b)]  # type: ignore[arg-type]
    if values[0] is None or values[1] is None:
        return None
    computed = _compute(m["op"], values[0], values[1])
    if computed is None or not _close(computed, c):  # type: ignore[arg-type]
        return None
    return Derivation(c, (a, b), m[0].strip())  # type: ignore[arg-type]


def _share(m: re.Match[str]) -> Derivation | None:
    """ "25% of 400 is 100" (the part), or "120 of the 400 (30%)" (the percentage)."""
    facts = [_fact(m[n]) for n in ("a", "b", "c")]
    if any(f is None for f in facts):
        return None
    a, b, c = facts
    va, vb = _value(a), _value(b)  # type: ignore[arg-type]
    if va is None or vb is None or not vb:
        return None
    if _PERCENT.search(m["a"]) and not _PERCENT.search(m["c"]):
        computed = va * vb / 100
    elif _PERCENT.search(m["c"]) and not _PERCENT.search(m["a"]):
        computed = va / vb * 100
    else:
        return None
    if not _close(computed, c):  # type: ignore[arg-type]
        return None
    return Derivation(c, (a, b), m[0].strip())  # type: ignore[arg-type]


def derivations(text: str) -> tuple[Derivation, ...]:
    """The arithmetic a sentence writes out that holds (its operands not yet checked)."""
    found = []
    if any(hint in text for hint in _RESULT_HINTS) and _RESULT.search(text):
        found += [_operation(m) for m in _OPERATION.finditer(text)]
    if ("%" in text or "cent" in text) and _OF_FIGURE.search(text) and _PERCENT.search(text):
        found += [_share(m) for m in _SHARE_OF.finditer(text)]
    return tuple(d for d in found if d is not None)
