"""The documentation holds together: every relative link of the README, ARCHITECTURE.md and
docs/*.md reaches a file and, when it names one, a heading of it; every docs page is linked
from the README; the README stays a user's page (issue: under about 450 lines); and what
moved out of the README is still found: every flag, setting, prompt format, check and
exclusion reason."""

import contextlib
import io
import re
from pathlib import Path
from typing import get_args

import pytest

from pipelines.cli import COMMANDS
from pipelines.cli import main as evpack
from pipelines.options.help import BEAM_HEADING
from schemas import PackingConfig
from schemas.reasons import ExclusionReason
from schemas.verification import CheckName

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 450
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub renders it: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    """The page's relative links (outside code blocks); web addresses are not followed."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def broken(page: Path) -> list[str]:
    found = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            found.append(f"{page.name}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            found.append(f"{page.name}: {target} (no such heading)")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_reaches_its_file_and_heading(page: Path) -> None:
    assert broken(page) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n\n## Its `part` (one)\n")
    (tmp_path / "b.md").write_text(
        "[ok](a.md#its-part-one) [self](#b) [gone](c.md) [wrong](a.md#part)\n"
        "```\n[in code](nowhere.md)\n```\n# B\n"
    )
    assert broken(tmp_path / "b.md") == [
        "b.md: c.md (no such file)",
        "b.md: a.md#part (no such heading)",
    ]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {t.partition("#")[0] for t in links(ROOT / "README.md")}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages and pages <= linked, sorted(pages - linked)


def test_the_readme_stays_a_short_page_for_users() -> None:
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"{lines} lines: move reference material to docs/"


def _text(*pages: Path) -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in pages)


def _help(command: str) -> str:
    """What `evpack COMMAND --help` prints of the command's own flags (`catalog` is
    `catalog load`): Beam's, listed apart after them, are Beam's to document."""
    out = io.StringIO()
    argv = [command, "load"] if command == "catalog" else [command]
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        evpack([*argv, "--help"])
    return out.getvalue().split(BEAM_HEADING)[0]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_flag_of_every_command_is_documented(command: str) -> None:
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z_]*", _help(command))) - {"--help"}
    assert flags, command
    docs = _text(*PAGES)
    assert sorted(f for f in flags if not re.search(rf"{f}(?![\w-])", docs)) == []


def test_every_config_setting_is_in_the_config_page() -> None:
    table = _text(ROOT / "docs" / "config.md")
    assert [f for f in PackingConfig.model_fields if f"`{f}`" not in table] == []


def test_every_prompt_format_is_in_the_readme_and_its_page() -> None:
    formats = get_args(PackingConfig.model_fields["prompt_format"].annotation)
    for page in (ROOT / "README.md", ROOT / "docs" / "formats.md"):
        assert [f for f in formats if f"`{f}`" not in _text(page)] == [], page.name


def test_every_check_and_exclusion_reason_is_explained() -> None:
    checks = _text(ROOT / "docs" / "verify.md")
    assert [c for c in get_args(CheckName) if f"| `{c}` |" not in checks] == []
    rules = _text(ROOT / "ARCHITECTURE.md").split("\n## Packing rules\n", 1)[1].split("\n## ")[0]
    assert [r.value for r in ExclusionReason if f"`{r.value}`" not in rules] == []
