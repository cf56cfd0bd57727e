-- Question: what share of input records could not be processed (unparseable, invalid,
-- oversized), per builder version? A release that raises it broke a producer contract.
-- One row per builder_version: input records = requests packed + dead letters.
WITH packed AS (
  SELECT builder_version, COUNT(*) AS requests
  FROM ${manifests}
  GROUP BY builder_version
),
dead AS (
  SELECT builder_version, COUNT(*) AS dead_letters
  FROM ${dead_letters}
  GROUP BY builder_version
)
SELECT
  builder_version,
  COALESCE(packed.requests, 0) AS requests,
  COALESCE(dead.dead_letters, 0) AS dead_letters,
  SAFE_DIVIDE(
    COALESCE(dead.dead_letters, 0),
    COALESCE(packed.requests, 0) + COALESCE(dead.dead_letters, 0)
  ) AS dead_letter_rate
FROM packed
FULL OUTER JOIN dead USING (builder_version)
