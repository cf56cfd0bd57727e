-- Question: do model answers keep to their evidence (labels that exist, figures found
-- in the cited text, no leaked ids or excluded text), per tenant and day?
-- One row per (day, tenant_id): answers, those checked, those passing every check, citation
-- validity (share of checked answers citing only listed labels), answers with unsupported
-- figures, answers leaking ids or excluded text, and answers the API failed to give.
SELECT
  DATE(event_time) AS day,
  tenant_id,
  COUNT(*) AS answers,
  COUNTIF(passed IS NOT NULL) AS checked,
  COUNTIF(passed) AS passed,
  SAFE_DIVIDE(
    COUNTIF(passed IS NOT NULL AND 'labels_exist' NOT IN UNNEST(failed_checks)),
    COUNTIF(passed IS NOT NULL)
  ) AS citation_validity,
  COUNTIF('figures_supported' IN UNNEST(failed_checks)) AS unsupported_figures,
  COUNTIF(
    'no_leaked_ids' IN UNNEST(failed_checks) OR 'no_excluded_text' IN UNNEST(failed_checks)
  ) AS leaks,
  COUNTIF(status != 'succeeded') AS failed_by_api
FROM ${verifications}
GROUP BY day, tenant_id
