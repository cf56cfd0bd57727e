"""Speed benchmarks and packing-quality evaluation on real question-answering data.

Not part of the installed job: run from the project root (`make bench`, `make eval`).
"""
