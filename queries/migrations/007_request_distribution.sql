-- The per-request distribution behind a measurement (issue "Evidence"): how
-- many requests it summarises and the p50/p90/p99 of their time to first
-- token and time per output token, in seconds. Null where a file holds only
-- means (core/evidence/formats/__init__.py DISTRIBUTION).
ALTER TABLE measurements ADD COLUMN requests BIGINT;
ALTER TABLE measurements ADD COLUMN ttft_p50_s DOUBLE;
ALTER TABLE measurements ADD COLUMN ttft_p90_s DOUBLE;
ALTER TABLE measurements ADD COLUMN ttft_p99_s DOUBLE;
ALTER TABLE measurements ADD COLUMN tpot_p50_s DOUBLE;
ALTER TABLE measurements ADD COLUMN tpot_p90_s DOUBLE;
ALTER TABLE measurements ADD COLUMN tpot_p99_s DOUBLE;
