-- Question: which verification checks do model answers fail, and how often? A check that
-- fails more after a prompt or model change says what the change broke.
-- One row per check: answers it ran on (checked answers), and how many passed it, failed
-- it, or were skipped by it (it did not apply).
SELECT
  c.name AS check_name,
  COUNT(*) AS answers,
  COUNTIF(c.outcome = 'pass') AS passed,
  COUNTIF(c.outcome = 'fail') AS failed,
  COUNTIF(c.outcome = 'skip') AS skipped
FROM ${verifications}, UNNEST(verifications.checks) AS c
GROUP BY check_name
