"""Hostile text past the record boundary: every piece that reads or shows a payload or a
user's string after parsing (the run summary's hints and top errors, the report's chart
labels and titles, tables and dead-letter previews, the answer and prompt lines verify
and replay read back) is total and shows the text as written, never as markup."""

import json
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib.image
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from packer.parsing.dead_letters import (
    SHAPE_HINTS,
    dead_letter,
    input_shape,
    shape_hints,
    top_errors,
)
from packer.parsing.strict_json import MAX_DEPTH, as_text
from packer.verification.answers import AnswerError, parse_answer_line, parse_prompt_line
from pipelines.batch import run
from pipelines.report import write_report
from pipelines.report.audit import ViewResult, read_table
from pipelines.report.markup import category, drill, pairs_table, table
from pipelines.report.plots import LABEL_CHARS, Plot, draw, plot_text
from pipelines.verification.replay import summary as replay_summary
from pipelines.views import View
from schemas import DeadLetter
from schemas._types import is_identifier
from schemas.arrow import arrow_schema
from schemas.replay import ReplayRow
from tests.audit_rows import ONE_RUN, write_audit
from tests.batch_run import SAMPLES, flags, input_lines
from tests.strategies import examples, hostile_text

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _no_control(text: str) -> bool:
    """No character of Unicode's C categories (controls, format marks, surrogates)."""
    return category(text) == text


def test_a_deeply_nested_record_is_a_dead_letter_and_the_summary_still_renders(
    tmp_path: Path,
) -> None:
    """The summary reads refused records back for its hints: a record nested 5,000 deep
    failed the whole run there (RecursionError) after every output was committed."""
    records = tmp_path / "in.jsonl"
    deep = "[" * 5000 + "]" * 5000
    records.write_text("\n".join([*input_lines(SAMPLES / "requests.jsonl"), deep]) + "\n")
    summary = run(flags(records, tmp_path / "out")).summary
    assert any(f"nested deeper than {MAX_DEPTH} levels" in kind for kind, _ in summary.top_errors)
    assert "prompts out" in summary.render()


def test_the_known_shapes_are_still_hinted_and_a_hostile_line_is_not() -> None:
    assert input_shape('  "page_content": "x",') == "pretty_json"
    assert input_shape("},") == "pretty_json"
    assert input_shape('[{"page_content": "x", "metadata": {}}]') == "langchain"
    assert input_shape('[{"id_": "n1", "text": "x"}]') == "llamaindex"
    assert input_shape('[{"a": 1}]') == "json_array"
    assert input_shape('{"a":' * 5000 + "1" + "}" * 5000) is None
    # a run of spaces in a `"key": ...` line backtracked quadratically (20 kB: 1 s)
    assert input_shape('"a":' + " " * 200_000 + "\nx") is None
    assert input_shape('"a":' + " " * 200_000 + "x") == "pretty_json"


@given(st.lists(hostile_text, max_size=8), st.lists(hostile_text, max_size=8))
def test_hints_and_top_errors_are_total_and_print_no_control_character(
    payloads: list[str], errors: list[str]
) -> None:
    hints = shape_hints(payloads)
    assert all(hint.split(" ", 1)[1] in SHAPE_HINTS.values() for hint in hints)
    top = top_errors(errors)
    assert sum(n for _, n in top) <= len(errors)
    assert all(_no_control(kind) and len(kind) <= 200 for kind, _ in top)


def test_a_tenant_with_dollars_is_drawn_as_written(tmp_path: Path) -> None:
    """Two `$` in a tenant id: matplotlib read it as math markup and the report failed."""
    records = tmp_path / "in.jsonl"
    lines = input_lines(SAMPLES / "requests.jsonl")
    first = json.loads(lines[0])
    first["tenant_id"] = "acme_$5_to_$10"
    records.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    out = tmp_path / "out"
    run(flags(records, out))
    page = write_report(out, tmp_path / "report").read_text(encoding="utf-8")
    assert "acme_$5_to_$10" in page
    chart = (tmp_path / "report" / "exclusions_daily.png").read_bytes()
    assert chart.startswith(PNG_SIGNATURE)


def _rows(labels: list[str]) -> tuple[tuple[Any, ...], ...]:
    return tuple((label, f"x{k % 3}", 1.0 + k) for k, label in enumerate(labels))


@settings(max_examples=examples(60))
@given(st.lists(hostile_text, min_size=1, max_size=4, unique=True), hostile_text)
def test_any_label_and_title_is_drawn_and_kept_in_the_legend(
    tmp_path_factory: pytest.TempPathFactory, labels: list[str], title: str
) -> None:
    path = tmp_path_factory.mktemp("plot") / "chart.png"
    view = View(title, "question?", "SELECT 1")
    figure = ViewResult(view, ("tenant_id", "day", "n"), _rows(labels))
    draw(figure, Plot("bars", "day", ("n",), "tenant_id", title), path)
    assert matplotlib.image.imread(path).shape[2] == 4  # a whole PNG, RGBA
    for label in labels:
        shown = plot_text(label)
        assert _no_control(shown) and len(shown) <= LABEL_CHARS + 1
        assert not shown.startswith("_")  # matplotlib would leave it out of the legend


class _Cells(HTMLParser):
    """The tags and the text of each cell of a piece of the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.cells: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in {"td", "th", "summary"}:
            self.cells.append("")

    def handle_data(self, data: str) -> None:
        if self.cells:
            self.cells[-1] += data


def _parsed(markup: str) -> _Cells:
    parser = _Cells()
    parser.feed(markup)
    parser.close()
    return parser


@given(st.lists(st.tuples(hostile_text, hostile_text), min_size=1, max_size=5))
def test_any_value_is_a_cell_of_the_page_as_written_never_markup(
    pairs: list[tuple[str, str]],
) -> None:
    """The panels' tables and drill-downs hold run data (ids, errors, payload previews):
    each value is one cell whose text is the value (escapes for control characters)."""
    parsed = _parsed(table(("key", "value"), pairs) + pairs_table(pairs))
    assert set(parsed.tags) == {"table", "tr", "th", "td"}
    expected = ["key", "value", *(category(v) for pair in pairs for v in pair)]
    expected += [category(v) if k % 2 else v for pair in pairs for k, v in enumerate(pair)]
    assert parsed.cells == expected
    assert all(_no_control(cell) for cell in parsed.cells[2 + 2 * len(pairs) :][1::2])
    opened = _parsed(drill([("summary", pairs_table(pairs))]))
    assert opened.tags[:2] == ["details", "summary"] and set(opened.tags[2:]) <= {
        "table",
        "tr",
        "th",
        "td",
    }


@given(hostile_text, hostile_text, hostile_text, st.one_of(st.none(), hostile_text))
def test_any_dead_letter_reads_back_into_the_report_as_it_was_written(
    error: str, payload: str, source: str, request_id: str | None
) -> None:
    """A dead letter holds anyone's bytes: its line reads back into the report's table,
    the same text, and its preview is printable."""
    letter = dead_letter("parse", error, payload, source, request_id)
    path = Path(f"/tmp/hostile-letter-{id(letter)}.jsonl")
    try:
        path.write_text(letter.model_dump_json() + "\n", encoding="utf-8")
        (row,) = read_table(str(path), DeadLetter).to_pylist()
    finally:
        path.unlink(missing_ok=True)
    assert (row["error"], row["payload"], row["source"]) == (
        letter.error,
        letter.payload,
        letter.source,
    )
    assert _no_control(category(row["payload"]))


@given(hostile_text)
def test_any_answer_or_prompt_line_is_read_or_refused_with_a_reason(line: str) -> None:
    """Lines verify and replay read back: a line nested too deep for the parser raised
    RecursionError (verify failed) instead of a dead letter."""
    for read in (parse_answer_line, parse_prompt_line):
        try:
            read(line)
        except AnswerError as err:
            assert str(err)


@given(st.lists(hostile_text.filter(is_identifier), min_size=1, max_size=4))
def test_the_replay_summary_prints_any_request_id_without_control_characters(
    ids: list[str],
) -> None:
    """Request ids are anyone's text that encodes: the summary lists those that differ."""
    with tempfile.TemporaryDirectory() as root:
        rows = [
            ReplayRow(
                request_id=request_id,
                tenant_id="t",
                status="prompt_differs",
                differences=["prompt_sha256"],
                stored_prompt_sha256="a",
                replayed_prompt_sha256="b",
                detail="",
            ).model_dump()
            for request_id in ids
        ]
        (Path(root) / "replay").mkdir()
        path = Path(root) / "replay" / "replay-00000-of-00001.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=arrow_schema(ReplayRow)), path)
        text, reproduced = replay_summary(root, root)
    assert not reproduced
    assert all(_no_control(line) for line in text.splitlines())


class _Page(HTMLParser):
    """Every tag and attribute of a page, and its script elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}

    def handle_data(self, data: str) -> None:
        self.text += data


PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "script", "body", "h1", "h2", "h3", "p", "nav",
    "a", "section", "table", "tr", "th", "td", "details", "summary", "img", "code",
}  # fmt: skip
PAGE_ATTRIBUTES = {"lang", "charset", "href", "class", "id", "data-empty", "open", "src", "alt"}


@settings(max_examples=examples(30))
@given(
    st.lists(hostile_text.filter(is_identifier), min_size=2, max_size=2, unique=True),
    hostile_text,
    hostile_text,
)
def test_a_run_of_hostile_values_makes_a_page_of_text_and_charts(
    tmp_path_factory: pytest.TempPathFactory,
    tenants: list[str],
    error: str,
    payload: str,
) -> None:
    """The whole report over a run whose tenants, errors and payloads are anyone's text:
    it is written, every chart is drawn, and nothing of the run becomes markup."""
    renamed = dict(zip(("acme", "globex"), tenants, strict=True))
    root = tmp_path_factory.mktemp("audit")

    def hostile(row: BaseModel) -> BaseModel:
        update: dict[str, Any] = {}
        if getattr(row, "tenant_id", None) in renamed:
            update["tenant_id"] = renamed[row.tenant_id]  # type: ignore[attr-defined]
        if isinstance(row, DeadLetter):
            update |= {"error": as_text(error), "payload": as_text(payload)}
        return row.model_copy(update=update)

    rows = {name: [hostile(r) for r in records] for name, records in ONE_RUN.items()}
    write_audit(root, rows)
    page = write_report(root, root / "report")
    parsed = _Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    assert parsed.tags <= PAGE_TAGS and parsed.attributes <= PAGE_ATTRIBUTES
    for tenant in tenants:
        assert category(tenant)[:100] in parsed.text
    for image in sorted((root / "report").glob("*.png")):
        assert image.read_bytes().startswith(PNG_SIGNATURE)
