"""The run record: what a batch run read and how, written once beside its outputs."""

from pydantic import BaseModel, ConfigDict

from schemas._types import UtcDatetime


class RunRecord(BaseModel):
    """One batch run's inputs and settings, as `runs/` holds them for `evpack report`.

    The manifests say what each prompt was built with (config hash, builder,
    model); only the run knows which files it read. Rejected: these fields on
    every manifest row (the same strings once per request).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    builder_version: str
    config_hash: str
    prompt_format: str
    model: str
    input: str
    input_format: str
    input_shape: str
    catalog: str | None
    """The catalog file or glob; None when it is read from Bigtable (`catalog_mode`)."""
    catalog_mode: str
    event_time: UtcDatetime
