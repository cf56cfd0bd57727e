-- Question: how often does packed evidence disagree with itself (passages from different
-- documents that differ only in numbers, dates or names), per tenant and day?
-- One row per (day, tenant_id): conflicts flagged in manifests, and requests with at least one.
SELECT
  DATE(event_time) AS day,
  tenant_id,
  COUNT(*) AS requests,
  COUNTIF(ARRAY_LENGTH(conflicts) > 0) AS requests_with_conflicts,
  SUM(ARRAY_LENGTH(conflicts)) AS conflicts
FROM ${manifests}
GROUP BY day, tenant_id
