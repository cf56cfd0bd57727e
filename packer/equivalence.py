"""The same fact in other words: quantities in other units or scales, and names as
aliases, before the copy rule calls two figures or names different.

A report copied by another outlet gives a distance in miles where the first
gave kilometres, a sum as `USD` where it wrote `$`, `1.5bn` for `1.5
billion`, `LA` for `Los Angeles`: the copy rule (`packer.reprints`) saw a
fact replaced and flagged a conflict. Here a differing stretch of canonical
words is read, with a word of context on each side, as:

- quantities: a number with its scale (`million`, `bn`, `k`) and unit (length,
  mass, area, volume, temperature, speed; a currency symbol or code before or
  after it), each converted to its dimension's base unit. Two readings agree
  when they differ by no more than their written precision allows: in one
  unit, half the last digit (`5000` is not `5500`); converted, the rounding
  of trailing zeros too, up to a tenth (`3.1` is 3.05 to 3.15, `5000` 4,500 to
  5,500, `1000` 900 to 1,100), with
  0.5% more for the conversion itself; `about` and its kin widen either to
  10%. So `about 5 km` is `3.1 miles`, and `5 km` is not `8 km`.
- names: one side the initials of the other (`LA` / `Los Angeles`, `UN` /
  `United Nations`, function words aside), or word by word each an initial
  or a prefix of at least three letters of the other (`J. Smith` / `John
  Smith`, `Calif` / `California`).

Rejected: converting every number in both passages and comparing the sets
(a passage that gives a figure in two units matched a changed one by its
other unit), and synonyms of common words (a lexicon is a guess about one
domain; a changed content word stays a difference).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from packer.records import canonical_words
from packer.typed_claims import SCALES

_NUMBER = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
_LENGTH = {"m": 1.0, "km": 1e3, "kilometre": 1e3, "kilometres": 1e3, "kilometer": 1e3,
           "kilometers": 1e3, "metre": 1.0, "metres": 1.0, "meter": 1.0, "meters": 1.0,
           "cm": 0.01, "mm": 0.001, "mi": 1609.344, "mile": 1609.344, "miles": 1609.344,
           "ft": 0.3048, "foot": 0.3048, "feet": 0.3048, "yd": 0.9144, "yard": 0.9144,
           "yards": 0.9144, "inch": 0.0254, "inches": 0.0254, "in": 0.0254,
           "nmi": 1852.0}  # fmt: skip
_MASS = {"kg": 1.0, "kilogram": 1.0, "kilograms": 1.0, "g": 0.001, "gram": 0.001,
         "grams": 0.001, "lb": 0.45359237, "lbs": 0.45359237, "pound": 0.45359237,
         "pounds": 0.45359237, "oz": 0.028349523125, "ounce": 0.028349523125,
         "ounces": 0.028349523125, "tonne": 1000.0, "tonnes": 1000.0, "t": 1000.0,
         "ton": 907.18474, "tons": 907.18474, "mg": 1e-6}  # fmt: skip
_AREA = {"km²": 1e6, "m²": 1.0, "sq km": 1e6, "square km": 1e6, "square kilometres": 1e6,
         "square kilometers": 1e6, "sq mi": 2589988.110336, "square miles": 2589988.110336,
         "square mile": 2589988.110336, "sq ft": 0.09290304, "square feet": 0.09290304,
         "square metres": 1.0, "square meters": 1.0, "ha": 1e4, "hectare": 1e4,
         "hectares": 1e4, "acre": 4046.8564224, "acres": 4046.8564224,
         "mi²": 2589988.110336, "ft²": 0.09290304, "km 2": 1e6, "m 2": 1.0,
         "mi 2": 2589988.110336}  # fmt: skip
"""`km 2` is `km²` as a page's superscript reads once its markup is gone (`99.3/km 2`);
not `ft 2`, which is as often six feet two inches."""
_VOLUME = {"l": 1.0, "litre": 1.0, "litres": 1.0, "liter": 1.0, "liters": 1.0, "ml": 0.001,
           "gallon": 3.785411784, "gallons": 3.785411784, "gal": 3.785411784,
           "m³": 1000.0, "cubic metres": 1000.0, "cubic meters": 1000.0,
           "cubic feet": 28.316846592, "ft³": 28.316846592, "barrel": 158.987294928,
           "barrels": 158.987294928, "bbl": 158.987294928}  # fmt: skip
_SPEED = {"km h": 1 / 3.6, "kph": 1 / 3.6, "kmh": 1 / 3.6, "km hr": 1 / 3.6,
          "kilometres per hour": 1 / 3.6, "kilometers per hour": 1 / 3.6,
          "mph": 0.44704, "miles per hour": 0.44704, "m s": 1.0,
          "metres per second": 1.0, "meters per second": 1.0, "knots": 0.514444,
          "knot": 0.514444, "kn": 0.514444}  # fmt: skip
_TEMPERATURE = {"c": (1.0, 0.0), "celsius": (1.0, 0.0), "f": (5 / 9, -32 * 5 / 9),
                "fahrenheit": (5 / 9, -32 * 5 / 9), "kelvin": (1.0, -273.15)}  # fmt: skip
"""Scale and offset to degrees Celsius. `k` is a thousand, not kelvin; `m` is a million
after a currency (`$5m`), else metres."""
UNITS: dict[str, tuple[str, float]] = {
    **{u: ("length", f) for u, f in _LENGTH.items()},
    **{u: ("mass", f) for u, f in _MASS.items()},
    **{u: ("area", f) for u, f in _AREA.items()},
    **{u: ("volume", f) for u, f in _VOLUME.items()},
    **{u: ("speed", f) for u, f in _SPEED.items()},
}
"""Unit (canonical words joined by a space) -> (dimension, factor to its base unit)."""
CURRENCIES = {"$": "usd", "us $": "usd", "usd": "usd", "dollars": "usd", "dollar": "usd",
              "€": "eur", "eur": "eur", "euros": "eur", "euro": "eur", "£": "gbp",
              "gbp": "gbp", "sterling": "gbp", "¥": "jpy", "jpy": "jpy", "yen": "jpy",
              "₹": "inr", "inr": "inr", "rs": "inr", "rupees": "inr", "₩": "krw", "krw": "krw",
              "won": "krw", "₽": "rub", "rub": "rub", "roubles": "rub", "rubles": "rub",
              "chf": "chf", "francs": "chf", "cad": "cad", "c $": "cad", "aud": "aud",
              "a $": "aud", "cny": "cny", "yuan": "cny", "rmb": "cny"}  # fmt: skip
"""A currency as written before or after the amount -> its ISO code."""
_APPROXIMATE = frozenset(
    ("about", "around", "approximately", "roughly", "nearly", "almost", "some", "circa",
     "approx", "estimated")
)  # fmt: skip
"""Hedges that widen a figure. Not comparisons: `more than 5` is not `less than 5`."""
APPROXIMATE_SHARE = 0.1
"""How far `about 5` may be from 5: a tenth."""
CONVERSION_SLACK = 0.005
"""Relative room for the conversion itself (rounded factors, rounded figures)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """A quantity in its dimension's base unit (`currency:usd`, `length`, `temperature`,
    or `number` for a bare number): its value, the unit it was written in, and how far
    its written precision lets it be off (`spread`, trailing zeros of an integer counted
    as rounding) or, in the unit it was written in, `exact` (the last digit only)."""

    dimension: str
    unit: str
    value: float
    spread: float
    exact: float
    sign: str = ""
    """The sign as written: in one unit `+5` and `-0` are not `5` and `0`."""


def _precision(word: str, zeros_round: bool) -> float:
    """Half a unit of the last written digit; with `zeros_round`, trailing zeros of an
    integer are rounding too (`5000` is 4,500 to 5,500 when converted), up to a tenth of
    the figure, as much as `about` allows: `1000` is 900 to 1,100, not 500 to 1,500
    (rejected: half its leading digit's unit, which made `1000 km` and `776.7 miles`,
    a quarter apart, one quantity)."""
    digits = word.lstrip("+-")
    if "." in digits:
        return 0.5 * 10 ** -len(digits.split(".")[1])
    zeros = len(digits) - len(digits.rstrip("0")) if zeros_round else 0
    rounded = 0.5 * 10 ** min(zeros, max(0, len(digits) - 1))
    return min(rounded, max(0.5, APPROXIMATE_SHARE * float(digits)))


def _unit_at(words: Sequence[str], k: int) -> str:
    """The longest unit (of up to three words) starting at `words[k]`."""
    for size in (3, 2, 1):
        phrase = " ".join(words[k : k + size])
        if len(words) >= k + size and (phrase in UNITS or phrase in _TEMPERATURE):
            return phrase
    return ""


def _currency_at(words: Sequence[str], k: int, j: int) -> str:
    """The currency written before the number at `k` (one or two words) or at `j`, after it."""
    if k >= 2 and f"{words[k - 2]} {words[k - 1]}" in CURRENCIES:
        return CURRENCIES[f"{words[k - 2]} {words[k - 1]}"]
    if k >= 1 and words[k - 1] in CURRENCIES:
        return CURRENCIES[words[k - 1]]
    return CURRENCIES.get(words[j], "") if j < len(words) else ""


def readings(words: Sequence[str]) -> list[Reading]:
    """Every quantity stated in `words` (canonical words), in base units."""
    out = []
    unit_end = 0  # past the last unit read: the `2` of `km 2` is no number of its own
    for k, word in enumerate(words):
        if k < unit_end or not _NUMBER.match(word):
            continue
        value, spread, exact = float(word), _precision(word, True), _precision(word, False)
        sign = word[0] if word[0] in "+-" else ""
        j = k + 1
        if j < len(words) and words[j] in SCALES and (words[j] != "m" or _currency_at(words, k, j)):
            scale = SCALES[words[j]]
            value, spread, exact, j = value * scale, spread * scale, exact * scale, j + 1
        if k >= 1 and words[k - 1] in _APPROXIMATE:
            spread = exact = max(spread, abs(value) * APPROXIMATE_SHARE)
        unit = _unit_at(words, j)
        unit_end = j + len(unit.split())
        currency = _currency_at(words, k, j)
        if currency:
            out.append(Reading(f"currency:{currency}", currency, value, spread, exact, sign))
        elif unit in _TEMPERATURE:
            factor, offset = _TEMPERATURE[unit]
            out.append(
                Reading(
                    "temperature",
                    unit,
                    value * factor + offset,
                    spread * factor,
                    exact * factor,
                    sign,
                )
            )
        elif unit:
            dimension, factor = UNITS[unit]
            out.append(
                Reading(dimension, unit, value * factor, spread * factor, exact * factor, sign)
            )
        else:
            out.append(Reading("number", "", value, spread, exact, sign))
    return out


def same_reading(a: Reading, b: Reading) -> bool:
    """One quantity: the same dimension, within what the written precision allows (in one
    unit, the last digit's; converted, the rounding of trailing zeros too, and the slack)."""
    if a.dimension != b.dimension:
        return False
    if a.unit == b.unit:
        return a.sign == b.sign and abs(a.value - b.value) < a.exact + b.exact  # 2012 is not 2013
    slack = CONVERSION_SLACK * max(abs(a.value), abs(b.value))
    return abs(a.value - b.value) <= a.spread + b.spread + slack


_QUANTITY_WORDS = frozenset(
    w
    for phrase in (*UNITS, *_TEMPERATURE, *CURRENCIES, *SCALES, *_APPROXIMATE)
    for w in phrase.split()
)


def _wording(words: Sequence[str]) -> list[str]:
    """The words of a stretch that are no part of a quantity."""
    return [w for w in words if w not in _QUANTITY_WORDS and not _NUMBER.match(w)]


Context = tuple[Sequence[str], Sequence[str], Sequence[str], Sequence[str]]
"""The words just before and after a stretch on the left, then on the right."""
_NO_CONTEXT: Context = ((), (), (), ())


def same_quantities(
    left: Sequence[str], right: Sequence[str], context: Context = _NO_CONTEXT
) -> bool:
    """Both stretches state quantities (read with the words around them: `context`), each
    of one side's is one of the other's, and the rest of their words agree."""
    if _wording(left) != _wording(right):
        return False
    before_a, after_a, before_b, after_b = context
    a, b = readings([*before_a, *left, *after_a]), readings([*before_b, *right, *after_b])
    return (
        bool(a)
        and bool(b)
        and all(any(same_reading(x, y) for y in b) for x in a)
        and all(any(same_reading(y, x) for x in a) for y in b)
    )


_NAME_GLUE = frozenset(("of", "the", "and", "for", "de", "la", "del", "von", "van", "&"))


def _initials(words: Sequence[str]) -> str:
    return "".join(w[0] for w in words if w not in _NAME_GLUE or len(words) == 1)


def _abbreviates(short: str, long: str) -> bool:
    """A word written short: its initial, or a prefix of three letters or more."""
    return long.startswith(short) and (len(short) == 1 or len(short) >= 3)


def same_name(left: Sequence[str], right: Sequence[str]) -> bool:
    """Two spellings of one name: an acronym of the other (`la` / `los angeles`), or word
    by word each equal to, an initial of or a prefix of the other (`j smith` / `john
    smith`). A word with a digit is a figure, never a name's short form: `1000` is no
    prefix of `10000` that stands for it."""
    if not left or not right or any(c.isdigit() for w in (*left, *right) for c in w):
        return False
    short, long = sorted((list(left), list(right)), key=len)
    if len(short) == 1 and len(long) > 1:
        return short[0] in (_initials(long), "".join(w[0] for w in long))
    return len(short) == len(long) and all(
        a == b or _abbreviates(a, b) or _abbreviates(b, a) for a, b in zip(short, long, strict=True)
    )


def same_fact(left: Sequence[str], right: Sequence[str], context: Context, named: bool) -> bool:
    """Whether two differing stretches of canonical words say one thing: the same
    quantities, read with the words before and after each (`context`), or, when both
    stretches are names (`named`: every word capitalized in its text), one name spelled
    two ways. Common words are never aliases: `can` is no short form of `cannot`."""
    return same_quantities(left, right, context) or (named and same_name(left, right))


EDGE_WORDS = 3
"""A differing stretch at the very start or end of both texts longer than this on one side
is where two windows of one page were cut, not a fact changed."""
REWRITE_WORDS = 6
"""A differing stretch longer than this on one side, anywhere, is text written otherwise
(a sentence rewritten, a table or a menu in one copy only), not a fact replaced."""


def other_text(left: Sequence[str], right: Sequence[str], context: Context) -> bool:
    """Whether a differing stretch is other text rather than a fact replaced: more than
    `REWRITE_WORDS` words on one side, or where two copies were cut at different
    places: at the start or the end of both texts, either one side a truncation of
    the other (`4,5` at the end of one, `4,500 people` of the other) or more than
    `EDGE_WORDS` words on one side (the windows run on into different text). What
    one copy has that the other does not is no disagreement. Rejected: any stretch
    at an edge (a copy whose last word is a changed figure is a conflict)."""
    if not left or not right:
        return False
    if max(len(left), len(right)) > REWRITE_WORDS:
        return True
    before_a, after_a, before_b, after_b = context
    at_start, at_end = not before_a and not before_b, not after_a and not after_b
    if not (at_start or at_end):
        return False
    if max(len(left), len(right)) > EDGE_WORDS:
        return True
    a, b = "".join(left), "".join(right)
    return (at_end and (a.startswith(b) or b.startswith(a))) or (
        at_start and (a.endswith(b) or b.endswith(a))
    )


Stretches = Sequence[tuple[Sequence[str], Sequence[str], Context]]


def _quantity_only(words: Sequence[str]) -> bool:
    return bool(words) and all(w in _QUANTITY_WORDS or _NUMBER.match(w) for w in words)


def without_moves(diffs: Stretches) -> list[tuple[Sequence[str], Sequence[str], Context]]:
    """The differing stretches less the quantities only moved: a figure dropped in one
    place and the same words added in another (`12 km (7.5 miles)` / `7.5 miles (12
    km)`, the other unit given first) is one claim written in another order."""
    dropped = [k for k, (left, right, _) in enumerate(diffs) if not right and _quantity_only(left)]
    added = [k for k, (left, right, _) in enumerate(diffs) if not left and _quantity_only(right)]
    moved: set[int] = set()
    for k in dropped:
        match = next((m for m in added if m not in moved and diffs[m][1] == diffs[k][0]), None)
        if match is not None:
            moved.update((k, match))
    return [d for k, d in enumerate(diffs) if k not in moved]


_MASKED = re.compile(r"(?<!\w)([^\W\d_]*)[*#]+([^\W\d_]*)|(?<!\w)([^\W\d_]+)(?:-{2,}|_{2,})")
"""A word with letters masked: `d***`, `f**k`, `sh*t`, `s---`."""
_PLACEHOLDER = re.compile(r"[\[(](?:expletive|censored|bleep|redacted|profanity)[^\])]*[\])]", re.I)
"""A word taken out and named: `[expletive]`, `(bleep)`, `[expletive deleted]`."""


def censored(left: Sequence[str], right: Sequence[str], text_a: str, text_b: str) -> bool:
    """Whether one side of a differing stretch is a word the other copy censored: one
    word against the masked word's visible letters (`damn` / `d***`: the mask's first
    letters open it, its last letters end it) or against a placeholder (`[expletive]`).
    Read from the texts, as canonical words keep only the letters (`d***` is `d`); a
    text is searched only when it holds a mark a mask or a placeholder needs (the
    searches were 5 us a candidate at 3,000 candidates a request, nearly all on texts
    with none). Rejected: any short word as a mask (`d` is also an initial)."""
    for word, mask, text in ((left, right, text_b), (right, left, text_a)):
        if len(word) != 1 or not mask or not word[0].isalpha():
            continue
        masked = " ".join(mask)
        bracketed = "[" in text or "(" in text
        for placeholder in _PLACEHOLDER.finditer(text) if bracketed else ():
            if " ".join(canonical_words(placeholder.group())) == masked:
                return True
        marked = "*" in text or "#" in text or "--" in text or "__" in text
        for found in _MASKED.finditer(text) if marked else ():
            head = (found.group(1) or found.group(3) or "").lower()
            tail = (found.group(2) or "").lower()
            visible = [p for p in (head, tail) if p]
            if (
                list(mask) == visible
                and word[0].startswith(head)
                and word[0].endswith(tail)
                and len(word[0]) > len(head) + len(tail)
            ):
                return True
    return False


_TEMPLATE_GLUE = frozenset(("and", "or"))


def unrendered(words: Sequence[str]) -> bool:
    """Whether a differing stretch is only wiki templates left unrendered (`Template :
    Constlk, Template : Constlk and Template : Constlk` where the other copy names three
    constituencies): no value, so nothing the other side's value disagrees with.
    Rejected: any stretch holding the word `template` (it is also a common word)."""
    k, found = 0, False
    while k < len(words):
        if words[k] == "template" and k + 1 < len(words):
            k, found = k + 2, True
        elif words[k] in _TEMPLATE_GLUE:
            k += 1
        else:
            return False
    return found
