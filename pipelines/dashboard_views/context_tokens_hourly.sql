-- Question: how much context does one request send to the model, typically (p50) and at
-- worst (p95), hour by hour and per tenant?
-- One row per (hour, tenant_id). prompt_tokens is the exact tokenizer count of the rendered
-- prompt; evidence_tokens counts the packed evidence blocks alone (budget.used).
SELECT
  TIMESTAMP_TRUNC(event_time, HOUR) AS hour,
  tenant_id,
  COUNT(*) AS requests,
  APPROX_QUANTILES(budget.prompt_tokens, 100)[OFFSET(50)] AS prompt_tokens_p50,
  APPROX_QUANTILES(budget.prompt_tokens, 100)[OFFSET(95)] AS prompt_tokens_p95,
  APPROX_QUANTILES(budget.used, 100)[OFFSET(50)] AS evidence_tokens_p50,
  APPROX_QUANTILES(budget.used, 100)[OFFSET(95)] AS evidence_tokens_p95
FROM ${manifests}
GROUP BY hour, tenant_id
