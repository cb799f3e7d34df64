-- Every model config: the reviewed reference rows and the user's custom ones.
SELECT id, name, family, hf_repo, config_json, config_source,
       published_total_params, total_rounding, total_convention, published_extra_params,
       published_active_params, active_rounding, active_convention, params_source, notes,
       false AS custom
FROM models
UNION ALL
SELECT id, name, 'custom', NULL, config_json, 'uploaded config.json',
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, notes, true
FROM custom_models
ORDER BY custom, id
