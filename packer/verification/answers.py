"""Answers and prompts read back: the batch APIs' result lines, and our prompt lines.

Each prompt format reads its own API's result lines and its own prompt lines
(`schemas.prompt_formats`); a line is offered to each format in the
registry's order, so one answers file may mix them. An answer to a
`messages` prompt, or one written by hand, is a plain `{request_id, answer}`
line. A line that is none of these raises `AnswerError` (a dead letter
upstream).
"""

import json
from dataclasses import dataclass
from typing import Any

from packer.layout import outside_blocks, parse_blocks
from schemas.prompt_formats import FORMATS
from schemas.prompt_formats.results import Answer, AnswerError, required_key


def _object(line: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        raise AnswerError(f"{what} is not valid JSON: {err.msg} at column {err.colno}") from err
    except RecursionError as err:  # a line is anyone's: the parser's own depth limit
        raise AnswerError(f"{what} is nested too deeply to read") from err
    if not isinstance(value, dict):
        raise AnswerError(f"{what} is not a JSON object")
    return value


def _plain(line: dict[str, Any]) -> Answer:
    key = required_key(line.get("request_id"), "request_id")
    answer = line.get("answer")
    if not isinstance(answer, str):
        raise AnswerError("plain answer line whose answer is not a string")
    return Answer(key, "plain", "succeeded", answer, None)


def parse_answer_line(line: str) -> Answer:
    """One result line of any supported format."""
    value = _object(line, "answer line")
    for fmt in FORMATS.values():
        if (answer := fmt.read_result(value)) is not None:
            return answer
    if "request_id" in value and "answer" in value:
        return _plain(value)
    raise AnswerError(
        f"not a result line of a prompt format ({', '.join(FORMATS)}), "
        "nor a {request_id, answer} line"
    )


@dataclass(frozen=True)
class PromptText:
    """A prompt line read back: its key, the evidence blocks by label, its format, and what
    else the model was given (the question, the notes: `given`)."""

    key: str
    blocks: dict[str, str]
    prompt_format: str
    given: str = ""


def _prompt_text(value: dict[str, Any]) -> tuple[str, str, str]:
    """The format that claims a prompt line, its key and its user text."""
    try:
        for fmt in FORMATS.values():
            if (read := fmt.prompt_text(value)) is not None:
                return fmt.name, *read
    except (KeyError, TypeError) as err:
        raise AnswerError(f"prompt line of no known format (missing {err})") from err
    raise AnswerError("prompt line of no known format")


def parse_prompt_line(line: str) -> PromptText:
    """A prompt line of any prompt format: the key it names its request by, and its blocks."""
    fmt, key, user = _prompt_text(_object(line, "prompt line"))
    return PromptText(key, parse_blocks(user), fmt, outside_blocks(user))
