-- Evidence: a run's rolling-window KV cache (tokens) and the latency limits
-- it was held to (MLPerf Server and Interactive: p99 TTFT and TPOT, seconds),
-- so such a row is set against the ceiling of the scenario it ran.
ALTER TABLE reference_measurements ADD COLUMN kv_window BIGINT;
ALTER TABLE reference_measurements ADD COLUMN ttft_limit_s DOUBLE;
ALTER TABLE reference_measurements ADD COLUMN tpot_limit_s DOUBLE;
