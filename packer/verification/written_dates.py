"""Dates as people write them, each read to the keys of the day, month or day of the year
it names, so that equal dates compare equal whatever their spelling.

"August 8, 2014", "8 August 2014", "Aug. 8, 2014", "8th of August 2014", "8. August 2014",
"8-Aug-2014" (a bibliography's access date) and "2014-08-08" (and "2014年8月8日") are one
date; "August 2014" is a month and "August 8" a day of the year, each found in any fuller
date of the same month or day. A numeric
date ("7/22/2020", "22.07.2020", "7-22-20") is read in every order that makes
a date (month/day, day/month; a two-digit year in 19xx and 20xx); a cited
block that writes an unambiguous numeric date settles the order, otherwise any
reading the block holds supports it.

A range of days gives its first day the year of its last ("from 23 February to 6 March
2011": 23 February 2011 too), where nothing but "to", "until", "through", "and" or a dash
stands between them.

Rejected: reading an ambiguous numeric date by the answer's language (a guess that fails
silently).
"""

import itertools
import re

MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("January", "Jan", "Januar"),
            ("February", "Feb", "Februar"),
            ("March", "Mar", "März"),
            ("April", "Apr"),
            ("May", "Mai"),
            ("June", "Jun", "Juni"),
            ("July", "Jul", "Juli"),
            ("August", "Aug"),
            ("September", "Sep", "Sept"),
            ("October", "Oct", "Oktober"),
            ("November", "Nov"),
            ("December", "Dec", "Dezember"),
        ]
    )
    for name in names
}
"""English month names and abbreviations, and the German names that differ."""
MONTH_NAME = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + ")"
MONTH = MONTH_NAME + r"\.?"
DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
YEAR = r"\d{4}"
DATE = re.compile(
    rf"(?=[\dJFMASOND])(?:(?<![\d./-])(?P<iso>(?P<iy>\d{{4}})(?P<isep>[-/.])(?P<im>0?[1-9]|1[0-2])(?P=isep)"
    rf"(?P<id>0?[1-9]|[12]\d|3[01]))(?![\d./-]?\d)"
    rf"|(?<![\d./-])(?P<na>\d{{1,2}})(?P<sep>[-/.])(?P<nb>\d{{1,2}})(?P=sep)"
    rf"(?P<ny>\d{{4}}|\d{{2}})(?![\d./-]?\d)"
    rf"|(?<![\d./-])(?P<d4>[12]\d|3[01]|0?[1-9])-(?P<m4>{MONTH_NAME})-(?P<y4>{YEAR})(?![\d-])"
    rf"|\b(?P<m1>{MONTH})\s+(?P<d1>{DAY})(?:,?\s+(?P<y1>{YEAR}))?(?![\d:])"
    rf"|\b(?P<d2>{DAY})\.?\s+(?:of\s+)?(?P<m2>{MONTH}),?(?:\s+(?P<y2>{YEAR}))?(?!\d)"
    rf"|\b(?P<m3>{MONTH}),?\s+(?P<y3>{YEAR})\b"
    r"|(?<!\d)(?:(?P<cy>\d{4})\s?[年년]\s?)?(?P<cm>1[0-2]|0?[1-9])\s?[月월]"
    r"(?:\s?(?P<cd>3[01]|[12]\d|0?[1-9])\s?[日일])?)"
)
"""Every date form starts with a digit or a month's capital: the lookahead skips other
positions before the alternatives are tried (a third of the checks' time without it).
Chinese, Japanese and Korean dates ("2020年7月22日", "2020년 7월 22일") are dates too."""


def numeric_readings(match: re.Match[str]) -> dict[str, tuple[str, ...]]:
    """A numeric date's readings by order ("mdy", "dmy"): each the days it can be."""
    a, b, year_text = int(match["na"]), int(match["nb"]), match["ny"]
    years = [year_text] if len(year_text) == 4 else [f"19{year_text}", f"20{year_text}"]
    readings: dict[str, tuple[str, ...]] = {}
    for order, month, day in (("mdy", a, b), ("dmy", b, a)):
        if 1 <= month <= 12 and 1 <= day <= 31:
            readings[order] = tuple(f"{y}-{month:02d}-{day:02d}" for y in years)
    return readings


def date_keys(match: re.Match[str]) -> tuple[str, ...]:
    """A written date's canonical keys, most specific first: YYYY-MM-DD, YYYY-MM, MM-DD."""
    g = match.groupdict()
    if g["iso"]:
        year, month, day = g["iy"], int(g["im"]), int(g["id"])
    elif g["cm"]:
        year, month, day = g["cy"] or "", int(g["cm"]), int(g["cd"] or 0)
    else:
        month_name = g["m1"] or g["m2"] or g["m3"] or g["m4"]
        month = MONTHS[month_name.rstrip(".")]
        day_text = g["d1"] or g["d2"] or g["d4"]
        day = int(re.sub(r"\D", "", day_text)) if day_text else 0
        year = g["y1"] or g["y2"] or g["y3"] or g["y4"] or ""
    keys = []
    if year and day:
        keys.append(f"{year}-{month:02d}-{day:02d}")
    if year:
        keys.append(f"{year}-{month:02d}")
    if day:
        keys.append(f"--{month:02d}-{day:02d}")
    return tuple(keys)


def day_keys(day: str) -> tuple[str, str, str]:
    """The keys a full date YYYY-MM-DD is found by: itself, its month, its day of the year."""
    return day, day[:7], "--" + day[5:]


_RANGE_JOIN = re.compile(r"\s*(?:to|until|till|through|thru|and|[-–—])\s*", re.IGNORECASE)


def shared_year_keys(text: str, matches: list[re.Match[str]]) -> set[str]:
    """The full dates of days a range's last date gives its year to ("23 February to 6 March
    2011": 2011-02-23 and 2011-02); `matches` are the text's `DATE` matches in order."""
    keys: set[str] = set()
    for first, last in itertools.pairwise(matches):
        if first["na"] is not None or last["na"] is not None:
            continue
        day, end = date_keys(first), date_keys(last)
        if (
            len(day) == 1
            and day[0].startswith("--")
            and end
            and not end[0].startswith("-")
            and _RANGE_JOIN.fullmatch(text, first.end(), last.start())
        ):
            keys.update((end[0][:4] + day[0][1:], end[0][:4] + day[0][1:4]))
    return keys
