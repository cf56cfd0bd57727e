-- Question: how does each job go run after run (a nightly job night after night): how many
-- runs it committed per day, how many requests they packed, and what share of the answers
-- checked against them passed, per answer set? A fall from one night to the next is there.
-- One row per (job, day, answer_set): a run's day is its start (its run id); every run a
-- record of is kept counts (each job and key keeps its latest), with all its requests, not
-- only those no later run packed again. answer_set is '' for runs with no verified answers;
-- answers of two sets (two models, a retry) are never summed.
WITH packed AS (
  SELECT run_id, COUNT(*) AS requests
  FROM ${run_manifests}
  GROUP BY run_id
),
answered AS (
  SELECT
    run_id,
    COALESCE(answer_set, '') AS answer_set,
    COUNTIF(passed IS NOT NULL) AS checked,
    COUNTIF(passed) AS passed
  FROM ${run_verifications}
  GROUP BY run_id, answer_set
)
SELECT
  COALESCE(runs.job, '') AS job,
  PARSE_DATE('%Y%m%d', SUBSTR(runs.run_id, 1, 8)) AS day,
  COALESCE(answered.answer_set, '') AS answer_set,
  COUNT(*) AS runs,
  SUM(COALESCE(packed.requests, 0)) AS requests,
  SUM(COALESCE(answered.checked, 0)) AS checked,
  SUM(COALESCE(answered.passed, 0)) AS passed,
  SAFE_DIVIDE(SUM(answered.passed), SUM(answered.checked)) AS pass_rate
FROM ${runs}
LEFT JOIN packed ON packed.run_id = runs.run_id
LEFT JOIN answered ON answered.run_id = runs.run_id
WHERE runs.run_id IS NOT NULL
GROUP BY 1, 2, 3
