"""Which catalog a run reads, and how requests meet it (`--catalog_mode`)."""

import argparse
import logging

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions

from packer.parsing.names import DEFAULT_CATALOG_CACHE_ENTRIES, DEFAULT_CATALOG_REFRESH_SECONDS
from pipelines.options.flags import GCS_FILE, POSITIVE_INT, PROJECT, Flag, Param, declare, require
from pipelines.options.input import FILE_FORMAT_LABELS, FILE_FORMATS, check_matches, file_format
from transforms.catalog.bigtable import CachedLookup
from transforms.catalog.bigtable_table import TableAddress
from transforms.catalog.factory import CATALOG_MODES, CatalogMode, CatalogSource
from transforms.catalog.side_input import catalog_documents, snapshot
from transforms.record_files import matchable

_LOG = logging.getLogger(__name__)

SIDE_INPUT_MAX_BYTES = 32 << 20
"""Above this size `auto` joins instead of broadcasting: measured with 2,000 requests
(benchmarks/scale.py), the side input is faster only for small catalogs, and its
memory grows with every document on every worker."""


class CatalogOptions(PipelineOptions):
    """The document catalog, and how requests meet it."""

    FLAGS = (
        Flag(
            "catalog",
            "The document catalog: a JSONL or Parquet file or glob, local or gs://.",
            template=Param("Document catalog", GCS_FILE),
        ),
        Flag(
            "catalog_format",
            "Format of --catalog; auto reads it from the file extension.",
            default="auto",
            choices=FILE_FORMATS,
            template=Param("Catalog format", choice_labels=FILE_FORMAT_LABELS),
        ),
        Flag(
            "catalog_mode",
            "How requests meet the catalog. side_input: every worker holds the whole "
            "catalog (small catalogs; streaming re-reads it every "
            "--catalog_refresh_seconds); join: batch only, candidates joined to the "
            "catalog rows they reference; bigtable: keyed lookups in --bigtable_table "
            "with a per-worker cache. auto: bigtable when --bigtable_table is given, "
            f"else side_input for catalog files up to {SIDE_INPUT_MAX_BYTES >> 20} MiB "
            "(always in streaming), else join.",
            default="auto",
            choices=("auto", *CATALOG_MODES),
            template=Param(
                "Catalog mode",
                choice_labels={
                    "auto": "By size, or Bigtable when a table is named",
                    "side_input": "Every worker holds the catalog",
                    "join": "Joined by document (batch)",
                    "bigtable": "Keyed lookups in Bigtable",
                },
            ),
        ),
        Flag(
            "bigtable_project",
            "Project of the Bigtable catalog (default: --project).",
            template=Param("Bigtable project", f"^{PROJECT}$"),
        ),
        Flag(
            "bigtable_instance",
            "Bigtable instance of the catalog.",
            template=Param("Bigtable instance", "^[a-z][a-z0-9-]{4,31}[a-z0-9]$"),
        ),
        Flag(
            "bigtable_table",
            "Bigtable table of the catalog, written by `evpack catalog load`.",
            template=Param("Bigtable catalog table", "^[A-Za-z0-9_.-]{1,50}$"),
        ),
        Flag(
            "catalog_refresh_seconds",
            "The revocation delay: a streaming job re-reads a side-input catalog this "
            "often, and a Bigtable lookup is cached this long.",
            default=DEFAULT_CATALOG_REFRESH_SECONDS,
            type=float,
            bound="positive",
            template=Param("Revocation delay (seconds)", r"^[0-9]{1,9}(\.[0-9]{1,6})?$"),
        ),
        Flag(
            "catalog_cache_entries",
            "Bigtable mode: catalog entries each packing worker thread keeps cached.",
            default=DEFAULT_CATALOG_CACHE_ENTRIES,
            type=int,
            bound="positive",
            template=Param("Catalog cache entries", POSITIVE_INT),
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


def _catalog_bytes(pattern: str) -> int | None:
    """The total size of the catalog files, or None when it cannot be told (no match)."""
    found = FileSystems.match([matchable(pattern)])[0].metadata_list
    return sum(m.size_in_bytes for m in found) if found else None


def choose_catalog_mode(
    declared: str, catalog_bytes: int | None, has_bigtable: bool, streaming: bool
) -> CatalogMode:
    """The catalog mode `auto` stands for (see --catalog_mode); a declared one stays."""
    if declared != "auto":
        return declared  # type: ignore[return-value]
    if has_bigtable:
        return "bigtable"
    if streaming or (catalog_bytes is not None and catalog_bytes <= SIDE_INPUT_MAX_BYTES):
        return "side_input"
    return "join"


def _bigtable_source(options: PipelineOptions, address: tuple[str | None, ...]) -> CatalogSource:
    """The Bigtable catalog at `address` (project, instance, table; the project defaults
    to --project)."""
    opts = options.view_as(CatalogOptions)
    project, instance, table_id = address
    project = project or options.view_as(GoogleCloudOptions).project
    if not (project and instance and table_id):
        raise ValueError(
            "--catalog_mode=bigtable needs --bigtable_instance, --bigtable_table and "
            "--bigtable_project (or --project)"
        )
    table = CachedLookup(
        TableAddress(project, instance, table_id),
        opts.catalog_refresh_seconds,
        opts.catalog_cache_entries,
    )
    return CatalogSource("bigtable", None, None, table, opts.catalog_refresh_seconds)


def resolve_catalog(options: PipelineOptions, *, streaming: bool) -> CatalogSource:
    """Which catalog a run reads and how; every error names the flag to fix.

    A side-input catalog is read once here when it can be (local, or any in streaming,
    where every worker re-reads it): a bad row, or a document listed twice, is then a
    flag error naming the file rather than a failed run with a worker's traceback. It
    is small by definition (`SIDE_INPUT_MAX_BYTES`); a joined catalog is too large to
    read twice and is checked by the run.
    """
    opts = options.view_as(CatalogOptions)
    address = (opts.bigtable_project, opts.bigtable_instance, opts.bigtable_table)
    has_bigtable = bool(opts.bigtable_table)
    if opts.catalog_mode == "auto" and has_bigtable and opts.catalog:
        raise ValueError(
            "pass --catalog (a file) or --bigtable_table, not both, or choose --catalog_mode"
        )
    local = opts.catalog is not None and "://" not in opts.catalog
    size = _catalog_bytes(opts.catalog) if local else None  # type: ignore[arg-type]
    mode = choose_catalog_mode(opts.catalog_mode, size, has_bigtable, streaming)
    if mode == "join" and streaming:
        raise ValueError(
            "--catalog_mode=join is for batch; a streaming job uses side_input or bigtable"
        )
    if mode == "bigtable":
        return _bigtable_source(options, address)
    pattern = require(opts.catalog, "catalog", "samples/catalog.jsonl")
    check_matches(pattern, "catalog")
    fmt = file_format(pattern, opts.catalog_format, "catalog")
    if mode == "side_input" and (local or streaming):
        documents = snapshot(catalog_documents(pattern, fmt))  # errors name the file
        _LOG.info("catalog %s: %d documents", pattern, len(documents))
    return CatalogSource(mode, pattern, fmt, None, opts.catalog_refresh_seconds)
