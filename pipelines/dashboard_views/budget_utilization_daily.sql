-- Question: is the token budget the binding constraint? How full is the evidence budget on
-- average and at p95, and how many requests had to leave evidence out for lack of room
-- (an `over_budget` exclusion), per tenant and day?
-- One row per (day, tenant_id). utilization = budget.used / budget.available (evidence tokens
-- packed over evidence tokens allowed).
WITH requests AS (
  SELECT
    DATE(event_time) AS day,
    tenant_id,
    SAFE_DIVIDE(budget.used, budget.available) AS utilization,
    EXISTS(SELECT 1 FROM UNNEST(excluded) AS x WHERE x.reason = 'over_budget') AS over_budget
  FROM ${manifests}
)
SELECT
  day,
  tenant_id,
  COUNT(*) AS requests,
  AVG(utilization) AS utilization_avg,
  APPROX_QUANTILES(utilization, 100)[OFFSET(95)] AS utilization_p95,
  COUNTIF(over_budget) AS requests_over_budget
FROM requests
GROUP BY day, tenant_id
