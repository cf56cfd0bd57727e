"""The packing config read from `--config`: YAML or JSON, every error naming the file."""

from collections.abc import Mapping
from typing import Any

import yaml
from apache_beam.io.filesystems import FileSystems
from pydantic import ValidationError

from packer.tokens import TokenCounter, TokenizerError
from pipelines.command import UsageError
from schemas import PackingConfig
from schemas._types import describe_validation_error
from schemas.config import FormatModels
from schemas.prompt_formats import FORMATS

BUDGET_FLAGS = ("input_limit", "reserved_answer", "max_evidence_tokens")
"""The config's budget settings that are flags too (`PackingOptions`)."""


def load_config(
    path: str | None,
    prompt_format: str | None = None,
    model: str | None = None,
    budget: Mapping[str, int | None] | None = None,
) -> PackingConfig:
    """The packing config from a YAML or JSON file (JSON is YAML); None means defaults.

    `prompt_format`, `model` and the `budget` settings given (the flags; None is not
    given) override the config's, so `config_hash` names them: the model is the
    format's (`models.<format>`, or `model` for our own `messages`), so a config
    naming other formats' models keeps them. The settings the file left out stay
    unset, so a format's default model still applies (`PackingConfig.format_model`).
    """
    config = _read_config(path)
    fmt = prompt_format or config.prompt_format
    overrides: dict[str, Any] = {k: v for k, v in (budget or {}).items() if v is not None}
    if fmt != config.prompt_format:
        overrides["prompt_format"] = fmt
    if model is not None:
        if (misfit := FORMATS[fmt].misfit(model)) is not None:
            raise UsageError(f"--model {model}: {misfit}")
        if fmt in FormatModels.model_fields:
            overrides["models"] = {**config.models.model_dump(exclude_unset=True), fmt: model}
        else:
            overrides["model"] = model
    if not overrides:
        return config
    try:  # the config's model may not fit the flag's format (`PromptFormat.models`)
        return PackingConfig.model_validate({**config.model_dump(exclude_unset=True), **overrides})
    except ValidationError as err:
        given = [f"--{k} {v}" for k, v in overrides.items() if k in BUDGET_FLAGS]
        if "prompt_format" in overrides or not given:
            given.insert(0, f"--prompt_format {fmt}")
        flags = " ".join(given)
        raise UsageError(f"{flags}: {describe_validation_error(err, PackingConfig)}") from err


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names a key twice.

    PyYAML keeps the last copy without a word, so `input_limit` given twice
    would mean whichever came last; request records refuse the same
    (`packer.parsing.strict_json`).
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
        if twice is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {twice!r} appears twice in one mapping", node.start_mark
            )
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: str) -> object:
    try:
        with FileSystems.open(path) as handle:
            return yaml.load(handle.read().decode("utf-8"), Loader=_UniqueKeyLoader)
    except OSError as err:
        raise ValueError(f"--config {path!r} cannot be read: {err}") from err
    except UnicodeDecodeError as err:
        raise ValueError(f"--config {path!r} is not UTF-8 text: {err}") from err
    except RecursionError as err:
        raise ValueError(f"--config {path!r} nests too deep to be a config") from err
    except yaml.YAMLError as err:
        raise ValueError(f"--config {path!r} is not valid YAML or JSON: {err}") from err


def _read_config(path: str | None) -> PackingConfig:
    if path is None:
        return PackingConfig()
    data = _read_yaml(path)
    if data is None:
        return PackingConfig()
    if not isinstance(data, dict):
        raise ValueError(f"--config {path!r} must hold a mapping of settings, not {data!r}")
    try:
        config = PackingConfig.model_validate(data)
    except ValidationError as err:
        raise ValueError(
            f"--config {path!r}: {describe_validation_error(err, PackingConfig)}"
        ) from err
    try:  # the workers load it too; a tokenizer that cannot load is a config error
        TokenCounter.load(config.tokenizer, config.tokenizer_file)
    except TokenizerError as err:
        raise ValueError(f"--config {path!r}: {err}") from err
    return config
