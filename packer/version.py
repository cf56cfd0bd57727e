"""The builder version stamped on every prompt and manifest."""

from importlib.metadata import PackageNotFoundError, version

try:
    BUILDER_VERSION = f"evidence-packer-{version('evidence-packer')}"
except PackageNotFoundError:  # running from a source tree that was not installed
    BUILDER_VERSION = "evidence-packer-0+source"
