-- Question: why do candidates not reach the prompt, per tenant and day? Any
-- `other_tenant` means retrieval is crossing tenants (alert on it); a jump in
-- `unauthorized` or `superseded` points at retrieval or catalog drift, `over_budget` at a
-- budget that is too tight.
-- One row per (day, tenant_id, reason), counted from the exclusion rows (one per left-out
-- candidate, exactly one reason each).
SELECT
  DATE(event_time) AS day,
  tenant_id,
  reason,
  COUNT(*) AS exclusions
FROM ${exclusions}
GROUP BY day, tenant_id, reason
