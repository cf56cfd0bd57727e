"""A command's `--help`: the flags of each options class it reads, one section each."""

import argparse
from collections.abc import Sequence

from pipelines.options.flags import Section, add_section


def usage(prog: str, description: str, sections: Sequence[Section]) -> str:
    """Help text of a command built on `PipelineOptions`.

    Beam's own parser would print only `-h`: `PipelineOptions` parses flags
    leniently and leaves `--help` to the caller. Each section is titled by its
    class's docstring; a command that reads a few flags of a shared class names
    them, so its help lists no flag it ignores.
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="Standard Beam options (--runner, --direct_num_workers, ...) pass through.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for section in sections:
        options = section[0]
        title = (options.__doc__ or options.__name__).splitlines()[0].rstrip(".")
        add_section(parser.add_argument_group(title), section)
    return parser.format_help()
