-- Evidence: which statistic of a run's requests a published time is (median,
-- mean, p90 ...), where its source prints it; the fit leaves out a served
-- run's mean first-token time (core.evidence.predictor.fitted).
ALTER TABLE reference_measurements ADD COLUMN statistic VARCHAR;
