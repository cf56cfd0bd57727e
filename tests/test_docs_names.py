"""The names the README and docs/ use are the code's: exclusion reasons, dead-letter stages,
flags; and every exclusion reason of the code is in docs/outputs.md's table.

A reason the docs name wrongly costs a user a query that finds nothing (the README once
said a candidate without `document_id` is excluded as `missing_provenance`: it is
`unknown_document`). So a sentence of the form "without `field` ... excluded as `reason`"
is run: the packer is given a candidate lacking that field, and must give that reason.
"""

import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest

from packer import Catalog, PackerRuntime, pack_request
from schemas import PackingConfig
from schemas.outputs import DeadLetterStage
from schemas.reasons import ExclusionReason
from tests.factories import candidate, document, request

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
REASONS = {r.value for r in ExclusionReason}

_LIST = r"((?:(?:both )?`\w+`(?:,? or |,? and |, )?)+)"
REASON_NAMED = re.compile(r"(?:excluded|left out)(?: as| by a gate \()? " + _LIST)
"""A list of reasons a page says candidates are excluded as."""
CLAIM = re.compile(r"without " + _LIST + r"(?: it)?(?: is| are)?(?: excluded)? as `(\w+)`")
"""'without `f1`, `f2` or both `f3` and `f4` (is excluded) as `reason`'."""
STAGE_NAMED = re.compile(r"(?:stage|stages) `(\w+)`|`(\w+)` dead letters?")

OTHER_PROGRAMS = {
    "--source_format": "bq load's, reading our Parquet (README)",
    "--host": "the emulators' (docs/development.md)",
    "--port": "the emulators'",
    "--rest-host": "bqemulator's",
    "--rest-port": "bqemulator's",
    "--grpc-port": "bqemulator's",
    "--ephemeral": "bqemulator's",
    "--in-memory": "gcp-storage-emulator's",
    "--source": "gcloud workflows deploy's (docs/running.md, the nightly schedule)",
    "--schedule": "gcloud scheduler jobs create's",
    "--time-zone": "gcloud scheduler jobs create's",
    "--http-method": "gcloud scheduler jobs create's",
    "--uri": "gcloud scheduler jobs create's",
    "--oauth-service-account-email": "gcloud scheduler jobs create's",
}
"""Flags the docs name of programs other than ours, each with whose it is."""
REFUSED_EXAMPLES = {"--prompt-format", "--budget"}
"""Flags docs/running.md names as typos a command refuses (and what it suggests)."""


def _page(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


def _names(listed: str) -> list[str]:
    return re.findall(r"`(\w+)`", listed)


def test_every_reason_the_docs_name_is_one_of_the_codes() -> None:
    named = {
        (page.name, name)
        for page in PAGES
        for listed in REASON_NAMED.findall(_page(page))
        for name in _names(listed)
    }
    assert {n for _, n in named} & REASONS, "the pattern finds no reason any more"
    assert sorted(pair for pair in named if pair[1] not in REASONS) == []


def _reasons_table() -> dict[str, str]:
    text = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    table = text.split("\n## Exclusion reasons\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| `")]
    return {row[1].strip().strip("`"): row[-2].strip() for row in rows}


def test_the_reasons_table_holds_every_reason_of_the_code_and_whether_it_withholds() -> None:
    assert _reasons_table() == {r.value: "yes" if r.withheld else "no" for r in ExclusionReason}


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def _reason_without(fields: tuple[str, ...], runtime: PackerRuntime) -> str:
    """The reason the packer gives a candidate lacking `fields` (all else in order)."""
    given: dict[str, Any] = dict.fromkeys(fields)
    result = pack_request(
        request(candidate("e1", **given)), Catalog([document()]), PackingConfig(), runtime
    )
    (exclusion,) = result.exclusions
    return exclusion.reason.value


def _claims() -> list[tuple[str, tuple[str, ...], str]]:
    """(page, fields missing together, reason) of every such sentence of the docs."""
    found = []
    for page in PAGES:
        for listed, reason in CLAIM.findall(_page(page)):
            groups = re.findall(r"both `(\w+)` and `(\w+)`|`(\w+)`", listed)
            for both_a, both_b, one in groups:
                fields = (both_a, both_b) if both_a else (one,)
                found.append((page.name, fields, reason))
    return found


UNNAMED = re.compile(r"without (?:them|these|those)\b[^.]{0,40}excluded as `\w+`")
"""A claim of what a missing field is excluded as that names no field cannot be run."""


def test_what_the_docs_say_a_missing_field_is_excluded_as_is_what_the_packer_does(
    runtime: PackerRuntime,
) -> None:
    unnamed = [(p.name, m) for p in PAGES for m in UNNAMED.findall(_page(p))]
    assert unnamed == [], "name the fields: 'without `document_id` ... excluded as `...`'"
    claims = _claims()
    assert {fields for _, fields, _ in claims} >= {("document_id",), ("chunk_id", "span")}
    wrong = [
        (page, fields, reason, actual)
        for page, fields, reason in claims
        if (actual := _reason_without(fields, runtime)) != reason
    ]
    assert wrong == []


def test_every_dead_letter_stage_the_docs_name_is_one_of_the_codes() -> None:
    stages = set(get_args(DeadLetterStage))
    named = {(page.name, a or b) for page in PAGES for a, b in STAGE_NAMED.findall(_page(page))}
    assert {n for _, n in named} & stages, "the pattern finds no stage any more"
    assert sorted(pair for pair in named if pair[1] not in stages) == []


def _code_flags() -> set[str]:
    """Every flag of our commands (the flag table), of Beam, and any other our code
    declares as a string (`--version`, the benchmarks')."""
    table = json.loads((ROOT / "pipelines" / "flags.json").read_text(encoding="utf-8"))
    flags = set(table["beam_flags"]) | {f for c in table["commands"].values() for f in c["flags"]}
    for folder in ("pipelines", "benchmarks", "packer", "transforms"):
        for path in (ROOT / folder).rglob("*.py"):
            flags |= set(re.findall(r"[\"'](--[a-z][\w-]*)", path.read_text(encoding="utf-8")))
    return flags


def test_every_flag_the_docs_name_exists() -> None:
    known = _code_flags() | set(OTHER_PROGRAMS) | REFUSED_EXAMPLES
    missing = set()
    for page in PAGES:
        for flag, star in re.findall(r"(?<![\w-])(--[a-z][\w]*(?:-[a-z]\w*)*)(\*?)", _page(page)):
            if star and any(k.startswith(flag) for k in known):
                continue
            if flag not in known:
                missing.add((page.name, flag))
    assert sorted(missing) == []
