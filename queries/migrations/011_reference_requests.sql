-- Evidence: the requests a published run sent, where its source prints them; a
-- max-load run's running batch cannot exceed them (core.evidence.reference).
ALTER TABLE reference_measurements ADD COLUMN requests BIGINT;
