"""The figures, dates and quoted phrases a sentence states and a cited block holds,
normalized so that equal values compare equal whatever their spelling.

Numbers: digit groups and trailing decimal zeros do not matter ("4,000" = "4
000" with a no-break or thin space = "4000", "2.50" = "2.5"); a scale
multiplies, as a word ("4 million", "4 mn"), a suffix on the digits ("4M",
"1k", "3.5bn", "$2B") or a CJK scale ("3万"), so "3.5bn" is 3,500,000,000 and
does not match "3.5 million". In the evidence the unscaled value counts too
("$5m" in an answer, read unscaled, still finds "$5 million"), never in the
answer, and so do numbers spelled out ("four", "twenty-one", "third", "two
million" are found by "4", "21", "3rd", "2M"; "number one", "first" by "number 1",
"1st"). A number is read beside any
script with no letter case ("数字是24"), not inside a Latin, Greek or Cyrillic
word ("A320", "COVID19"). Percentages compare as written: "45%" is 45, never
0.45, unless the evidence writes 0.45 itself. Dates are read as
`packer.verification.written_dates` says. Nothing is guessed. Quoted phrases ("..." or
“...”) compare as people quote (`packer.verification.quoted_terms`). Both sides are read
`as_written` first (tokenized text: "October 3 , 2013", "may 30", "2007 -- 08").
Spelled-out numbers in an answer ("four") are not figures here: a
deterministic check cannot tell them from prose ("one of them"), so they are
left to entailment checks.

As people write them: a number in a name or notation ("COVID-19", "Windows
10", "2D", "No. 5") carries its name (`name_of`) and fails only where a
source writes that name with another number; list-item numbers, section
signs and sources named in prose ("According to 1,", "in contexts 1 and 2":
`packer.verification.marks`) are no figures; a year range's second year is the whole year
("2022-23"); "c.1570" is 1570; the evidence's digits glued to a word
("responsive.2") and compound spelled numbers ("two thousand and five") are
read; a short quoted term is matched as words in any inflection
(`packer.verification.quoted_terms`).

Rejected: matching figures as substrings of the cited text ("40" would be
found in "1400"), parsing numbers with locale rules (the evidence is
English prose whatever its locale).
"""

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from packer.verification.as_written import as_written
from packer.verification.marks import markers
from packer.verification.quoted_terms import prose_words, quoted_in, term_in, text_words
from packer.verification.spelled_numbers import ordinal_keys, ranked_numbers, spelled_numbers
from packer.verification.written_dates import (
    DATE,
    MONTHS,
    date_keys,
    day_keys,
    numeric_readings,
    shared_year_keys,
)

_CASED = r"A-Za-z\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF"
"""Letters of cased scripts: a digit next to one is part of a word ("A320"), not a figure."""
_SCALES = {
    "thousand": 10**3,
    "million": 10**6,
    "mn": 10**6,
    "mln": 10**6,
    "billion": 10**9,
    "bn": 10**9,
    "trillion": 10**12,
    "tn": 10**12,
    "k": 10**3,
    "m": 10**6,
    "b": 10**9,
    "万": 10**4,
    "亿": 10**8,
}
"""Scale words (after a space or not), digit suffixes (`k`, `K`, `M`, `B`; `m` only
after a currency sign, as "100m" is a distance) and CJK scales, by value."""
_NUMBER = re.compile(
    rf"(?=[\d$£€¥₹])(?<![{_CASED}\d_.,®™])(?P<cur>[$£€¥₹]\s?)?(?P<int>\d{{1,3}}(?:,\d{{3}})+|\d{{1,3}}(?:[\u00a0\u202f\u2009]\d{{3}})+|\d+)"
    rf"(?:\.(?P<frac>\d+))?"
    r"(?:(?:\s*|-)(?P<scale>(?i:thousand|million|billion|trillion|mn|mln|bn|tn))(?![A-Za-z])"
    rf"|(?P<suffix>[kKMBm])(?![{_CASED}\d])"
    r"|\s?(?P<cjk>[万亿]))?"
)
_GROUPED_OTHERWISE = re.compile(
    rf"(?=\d)(?<![{_CASED}\d_.,])(?:(?P<int>\d{{1,3}}(?P<sep>[ .'’])\d{{3}}(?:(?P=sep)\d{{3}})*)"
    r"(?:,(?P<frac>\d+))?|(?P<whole>\d+),(?P<dec>\d{1,2}))(?!\d|[.,'’]\d)"
)
"""Numbers written with other conventions: digit groups of dots, spaces or apostrophes
("4.000", "1 000 000", "4'000") and a decimal comma ("3,5"). Each is read every way it
can mean ("4.000": 4000 or 4; "5 100": 5100, or 5 and 100; "3,5": 3.5, or 3 and 5) and is
supported when the cited block holds any one reading. Rejected: one locale per answer,
guessed from its language (answers mix them, and a wrong guess fails silently)."""
_SPACES = re.compile(r"\s+")
_GROUPING = str.maketrans("", "", ",\u00a0\u202f\u2009")
"""Digit group separators: commas, and the no-break and thin spaces of "4 000" (a plain space
is not one: "in 2019 150 people" is two numbers)."""
_UNIFY = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-"})


def normalize_phrase(text: str) -> str:
    """Case-folded text with quotes, dashes and runs of whitespace unified."""
    return _SPACES.sub(" ", text.translate(_UNIFY)).strip().casefold()


def number_value(integer: str, fraction: str | None, scale: str | None) -> str:
    """A number's canonical spelling: no digit groups, no trailing zeros, scale applied."""
    try:
        digits = integer.translate(_GROUPING)
        value = Decimal(digits + ("." + fraction if fraction else ""))
    except InvalidOperation:
        return integer
    if scale:
        value *= _SCALES[scale.lower()]
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scale(match: re.Match[str]) -> str | None:
    suffix = match["suffix"]
    if suffix == "m" and not match["cur"]:
        suffix = None  # "100m" is a distance; "$100m" a sum
    return match["scale"] or suffix or match["cjk"]


@dataclass(frozen=True)
class Fact:
    """One checkable statement of a sentence: a figure, a date or a quoted phrase.

    `key` is the canonical form compared with the cited text's; a numeric
    date has no single one, so `readings` holds each reading's days by order.
    """

    kind: str  # "number", "date", "quote" or "term" (a short quoted term, `.claims`)
    text: str  # as written in the answer
    key: str
    readings: tuple[tuple[str, tuple[str, ...]], ...] = ()
    name: str = ""
    """For a number that is part of a name or notation (`name_of`): the name, folded
    ("windows" in "Windows 10"); such a number fails only where a source writes the
    same name with another number."""
    name_word: bool = False
    """The name is a capitalised word before the number ("Windows 10"): a number is read so
    only when a source writes that word, as German capitalises every noun ("Zahl 7")."""


@dataclass(frozen=True)
class TextFigures:
    """The figures, dates and phrase text of one evidence block, ready for lookups.

    `orders` are the orders ("mdy", "dmy") its unambiguous numeric dates use:
    an answer's numeric date is read only so when there are any. A scaled
    figure of an answer is supported by any value it rounds from ("$3.5
    million" by "$3,512,000", not by "$3,600,000"); an unscaled one only by
    its own value.
    """

    numbers: frozenset[str]
    dates: frozenset[str]
    phrase_text: str
    """Its `prose_words`, which quotations and quoted terms are looked up in."""
    orders: frozenset[str] = frozenset()
    values: tuple[Decimal, ...] = ()
    """`numbers` as sorted values, for the values a rounded figure may stand for."""
    named: frozenset[str] = frozenset()
    """The names the text writes with a number ("Windows 10": "windows"; `name_of`)."""
    _memo: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)
    """The text's words (`text_words`), read when a quoted term is first checked against it."""

    def names(self, fact: Fact) -> bool:
        """Whether the text writes the name of a name-number fact with a number of its own."""
        return bool(fact.name) and fact.name in self.named

    def supports(self, fact: Fact) -> bool:
        if fact.kind == "number":
            if fact.key in self.numbers:
                return True
            return any(self._holds(how, keys) for how, keys in fact.readings)
        if fact.kind == "date":
            if not fact.readings:
                return fact.key in self.dates
            usable = [days for order, days in fact.readings if order in self.orders]
            chosen = usable or [days for _, days in fact.readings]
            return any(day in self.dates for days in chosen for day in days)
        if fact.kind == "term":
            return term_in(fact.key, self.words())
        return quoted_in(fact.key, self.phrase_text)

    def words(self) -> frozenset[str]:
        """The text's words, folded (`text_words`), read once."""
        if "words" not in self._memo:
            self._memo["words"] = text_words(self.phrase_text)
        return self._memo["words"]

    def _holds(self, how: str, keys: tuple[str, ...]) -> bool:
        """A number's reading: all of `keys` ("all"), or any value in [low, high) ("within")."""
        if how == "all":
            return all(k in self.numbers for k in keys)
        low, high = Decimal(keys[0]), Decimal(keys[1])
        at = bisect_left(self.values, low)
        return at < len(self.values) and self.values[at] < high


def text_figures(text: str) -> TextFigures:
    """Every figure (also those inside dates, unscaled too, and spelled out) and date of a
    text; its ambiguous numeric dates in the order its unambiguous ones use (both when none
    says); a range's first day in its last day's year. Read `as_written`, as the answer is."""
    text = as_written(text)
    numbers: set[str] = {number_value(str(v), None, s) for v, s in spelled_numbers(text)}
    ranks, named = ranked_numbers(text)
    numbers.update(ranks)
    numbers.update(ways[0][0] for m in _GROUPED_OTHERWISE.finditer(text) for ways in [_ways(m)])
    for m in _NUMBER.finditer(text):
        numbers.add(number_value(m["int"], m["frac"], None))
        if year := season_year(text, m):
            numbers.add(SEASON + year)
        if _scale(m):
            numbers.add(number_value(m["int"], m["frac"], _scale(m)))
        if name := name_of(text, m):
            named.add(name)
    numbers.update(number_value(m[1], m[2], None) for m in _GLUED.finditer(text))
    dates: set[str] = set()
    numeric: list[dict[str, tuple[str, ...]]] = []
    dates.update(shared_year_keys(text, matches := list(DATE.finditer(text))))
    for m in matches:
        if m["na"] is None:
            dates.update(date_keys(m))
        else:
            numeric.append(numeric_readings(m))
    orders = {order for readings in numeric if len(readings) == 1 for order in readings}
    for readings in numeric:
        settled = [days for order, days in readings.items() if order in orders]
        for days in settled or readings.values():
            dates.update(key for day in days for key in day_keys(day))
    values = tuple(sorted(v for v in map(_decimal, numbers) if v is not None))
    return TextFigures(
        frozenset(numbers),
        frozenset(dates),
        prose_words(text),
        frozenset(orders),
        values,
        frozenset(named),
    )


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with the spans already read as facts blanked out."""
    for start, end in reversed(spans):
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _ways(match: re.Match[str]) -> list[tuple[str, ...]]:
    """The readings of a `_GROUPED_OTHERWISE` number, each the values that must all be found."""
    if match["whole"] is not None:
        return [(number_value(match["whole"], match["dec"], None),), (match["whole"], match["dec"])]
    sep, pieces = match["sep"], match["int"].split(match["sep"])
    ways = [(number_value("".join(pieces), match["frac"], None),)]
    if sep == "." and len(pieces) == 2 and match["frac"] is None:
        ways.append((number_value(pieces[0], pieces[1], None),))
    if sep == " " and len(pieces) == 2 and pieces[1] != "000":
        ways.append(tuple(number_value(p, None, None) for p in pieces))  # "5 100": 5 and 100?
    return ways


_GLUED = re.compile(rf"(?:(?<=[{_CASED}])|(?<=[{_CASED}][.,;:)\]]))(\d+)(?:\.(\d+))?(?![\d,])")
"""Digits glued to the word or punctuation before them ("responsive.2", "A320"): the
evidence side reads them too (an answer may restate the number), the answer side never
(`_NUMBER`: they are part of a word there)."""
_NAME_WORD = re.compile(r"[(\[\"“]?([A-Z][\w&]*[A-Za-z\d]|No\.|Nos\.)")
_NOT_NAMES = frozenset(
    """a about above after against all almost also an and any approximately are around as at
    be before below between both but by circa count each either every exactly few from has have
    in including into is it its just last least less many more most much near nearly next no nor
    not of on only or other our over overall per roughly since so some than that the their there
    these they this those through to top total under until up upto us was we were what when where
    which while who with within year years""".split()  # noqa: SIM905
)
"""Capitalised words before a number that are not names ("In 2019", "About 40", "Over 100")."""
_MEASURED = re.compile(r"\s*(?:%|percent\b|per\s+cent\b)")


def name_of(text: str, match: re.Match[str]) -> str:
    """The name a number is part of, folded, or "" when it is a figure.

    A number is part of a name or notation when it follows a capitalised word by a
    hyphen ("COVID-19", "F-16": "covid", "f"; "mid-1980s" is a figure), or by a space
    when it is no function word ("Windows 10", "Rule 19": "windows", ...), or has a
    capital letter glued after it ("2D", "5G": "#d", "#g"; not the
    scale suffixes K, M, B). Never one: a number with a currency sign, a scale, a
    percent sign or digit groups ("$5", "4 million", "45%", "4,000"), which
    state quantities. Limits: a name in lower case ("529 plan") and a capitalised
    word opening a sentence before a quantity ("Tickets 40 each") are read as a
    figure and as a name respectively; a name-number is still checked where a
    source writes the same name with another number (`TextFigures.names`).
    """
    if match["cur"] or _scale(match) or "," in match["int"] or _MEASURED.match(text, match.end()):
        return ""
    before = text[max(0, match.start() - 40) : match.start()]
    if len(before) >= 2 and before[-1] == "-" and before[-2].isalpha():
        code = re.split(r"[^\w]", before[:-1])[-1]  # "mid-1980s", "top-10": quantities
        return code.casefold() if code[:1].isupper() else ""
    after = text[match.end() : match.end() + 2]
    if after[:1].isupper() and not after[1:2].isalpha() and after[0] not in "KMB":
        return "#" + after[0].casefold()
    if before.endswith("#"):
        return "#"
    if not before.endswith((" ", "\u00a0")) or not before[:-1].strip():
        return ""
    word = _NAME_WORD.fullmatch(before[:-1].rsplit(None, 1)[-1])
    if word and word[1].casefold() not in _NOT_NAMES and word[1].rstrip(".") not in MONTHS:
        return word[1].casefold()
    return ""


_CIRCA = re.compile(r"(?<![\w.])(?:c|ca|approx)\.(?=\d)")
"""Circa before a year ("c.1570"): blanked, so the year is read though glued to the point."""


def figure_facts(text: str) -> list[Fact]:
    """The dates and figures `text` states, each read once: a date's digits are no figure.
    Read `as_written`, as the evidence is."""
    text = as_written(text)
    facts: list[Fact] = []
    spans = []
    for m in DATE.finditer(text):
        if m["na"] is not None:
            readings = numeric_readings(m)
            if readings:
                first = next(iter(readings.values()))[0]
                facts.append(Fact("date", m[0], first, tuple(readings.items())))
                spans.append(m.span())
            continue
        keys = date_keys(m)
        if keys:  # a month alone ("3月") states no checkable date, and is no figure either
            facts.append(Fact("date", m[0], keys[0]))
        spans.append(m.span())
    rest = _blanked(text, spans)
    if "c." in rest or "ca." in rest or "approx." in rest:
        rest = _CIRCA.sub(lambda m: " " * len(m[0]), rest)
    spans = []
    for m in _GROUPED_OTHERWISE.finditer(rest):
        ways = _ways(m)
        facts.append(Fact("number", m[0], ways[0][0], tuple(("all", w) for w in ways)))
        spans.append(m.span())
    rest = _blanked(rest, [*markers(rest), *spans])
    for m in _NUMBER.finditer(rest):
        if year := season_year(rest, m):  # "2022-23": 2023, as the evidence writes it either way
            facts.append(Fact("number", m[0], year, (("all", (SEASON + year,)),)))
            continue
        key, name = number_value(m["int"], m["frac"], _scale(m)), name_of(rest, m)
        by_word = name.isalnum() and rest[m.start() - 1 : m.start()].isspace()
        ranks = tuple(("all", (k,)) for k in ordinal_keys(rest, m.end(), key))
        readings = _rounded_from(m, key) or ranks
        facts.append(Fact("number", m[0], key, readings, name, by_word))
    return facts


SEASON = "season "
"""The key prefix of a year a range ends with in the evidence ("2022-23": "season 2023"): it
supports the same range in an answer, never a year standing alone ("1996" is not held by
"1995–96")."""
_SEASON_HEAD = re.compile(r"(?<!\d)(1[5-9]|20)(\d\d)\s?[-–—/]\s?$")


def season_year(text: str, match: re.Match[str]) -> str:
    """The whole year a number ends a year range with ("2022-23" and "2022–2023": 2023,
    "1999–00": 2000), or "" when it is not one (a second year no later than the first,
    "2020-12", is not: it may be a month)."""
    if len(match["int"]) not in (2, 4) or match["frac"] or match["cur"] or _scale(match):
        return ""
    head = _SEASON_HEAD.search(text, max(0, match.start() - 8), match.start())
    if not head:
        return ""
    first = int(head[1] + head[2])
    second = int(match["int"]) if len(match["int"]) == 4 else first // 100 * 100 + int(match["int"])
    if second <= first and first % 100 == 99 and len(match["int"]) == 2:
        second += 100  # "1999–00"
    return str(second) if 0 < second - first < 100 else ""


def _rounded_from(match: re.Match[str], key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The values a scaled figure rounds from ("3.5 million": [3,450,000, 3,550,000)), as a
    "within" reading; none for an unscaled one, whose every digit is a claim. Rejected: an
    unscaled figure after a hedge ("about 40%") standing for the values it rounds from at
    its last digit other than a trailing zero: on the real answers' tuning split it let two
    wrong claims through and rescued none, and the template bench's recall of changed
    figures fell from 0.993 to 0.987; nor "over 130" as [130, 140): it passed a wrong claim."""
    scale = _scale(match)
    if not scale:
        return ()
    half = Decimal(_SCALES[scale.lower()]) / 2 / Decimal(10) ** len(match["frac"] or "")
    value = Decimal(key)
    return (("within", (str(value - half), str(value + half))),)
