-- Question: why were input records refused, by stage and error? The commonest errors come
-- first in the report, each with an example to open.
-- One row per (stage, error_pattern): the error with its numbers and hashes masked as N,
-- so one cause met at different offsets or sizes counts once; the dead letters, and the
-- smallest error text, source file and request id of the group as an example.
SELECT
  stage,
  REGEXP_REPLACE(error, r'[0-9a-f]{8,}|[0-9]+', 'N') AS error_pattern,
  COUNT(*) AS dead_letters,
  MIN(error) AS example_error,
  MIN(source) AS example_source,
  MIN(request_id) AS example_request_id
FROM ${dead_letters}
GROUP BY stage, error_pattern
