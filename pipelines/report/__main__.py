"""`python -m pipelines.report`, as `evpack report`."""

import sys

from pipelines.report import main

sys.exit(main(sys.argv[1:]))
