-- Question: do model answers keep to their evidence (labels that exist, figures found
-- in the cited text, no leaked ids or excluded text), per tenant and day?
-- One row per (day, tenant_id): answers, those checked, those passing every check, citation
-- validity (share of checked answers citing only listed labels), answers with unsupported
-- figures, answers leaking ids or excluded text, answers the API failed to give (errored,
-- canceled, expired, no content), answers the output limit cut off (truncated), and answers
-- naming no request of the run, or several, or one without a prompt line (unmatched: day
-- and tenant_id null, no API failed).
SELECT
  DATE(event_time) AS day,
  tenant_id,
  COUNT(*) AS answers,
  COUNTIF(passed IS NOT NULL) AS checked,
  COUNTIF(COALESCE(passed, FALSE)) AS passed,  -- DuckDB counts an all-null group as null
  SAFE_DIVIDE(
    COUNTIF(passed IS NOT NULL AND 'labels_exist' NOT IN UNNEST(failed_checks)),
    COUNTIF(passed IS NOT NULL)
  ) AS citation_validity,
  COUNTIF('figures_supported' IN UNNEST(failed_checks)) AS unsupported_figures,
  COUNTIF(
    'no_leaked_ids' IN UNNEST(failed_checks) OR 'no_excluded_text' IN UNNEST(failed_checks)
  ) AS leaks,
  COUNTIF(status IN ('errored', 'canceled', 'expired', 'no_content')) AS failed_by_api,
  COUNTIF(status = 'truncated') AS truncated,
  COUNTIF(status IN ('unknown_request', 'ambiguous_request', 'no_prompt')) AS unmatched
FROM ${verifications}
GROUP BY day, tenant_id
