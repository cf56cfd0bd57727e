-- Question: what share of requests got a prompt that leaves a required facet without
-- evidence, per tenant and day? Such answers are likely incomplete.
-- One row per (day, tenant_id). The share is over all requests; a request that asked for no
-- facet cannot leave one uncovered.
SELECT
  DATE(event_time) AS day,
  tenant_id,
  COUNT(*) AS requests,
  COUNTIF(ARRAY_LENGTH(uncovered_facets) > 0) AS requests_with_uncovered_facets,
  SAFE_DIVIDE(COUNTIF(ARRAY_LENGTH(uncovered_facets) > 0), COUNT(*)) AS uncovered_share
FROM ${manifests}
GROUP BY day, tenant_id
