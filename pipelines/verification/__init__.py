"""The `evpack verify`, `evpack verify-stream` and `evpack replay` jobs."""
