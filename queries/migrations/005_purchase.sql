-- Purchase decisions (issue 16): how far tensor parallelism reaches on an
-- accelerator's standard platform, the published per-call latency of a
-- small all-reduce over it (both declared in core/catalogue/specs.py), and
-- the published prices of accelerators (data/seed/prices.csv, a reference
-- table rebuilt with the seed; see PRICES_FORMAT.md).
ALTER TABLE accelerators ADD COLUMN scaleup_domain INTEGER;
ALTER TABLE accelerators ADD COLUMN allreduce_latency_s DOUBLE;
ALTER TABLE custom_accelerators ADD COLUMN scaleup_domain INTEGER;
ALTER TABLE custom_accelerators ADD COLUMN allreduce_latency_s DOUBLE;
CREATE TABLE prices (
    gpu VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    usd DOUBLE NOT NULL,
    provider VARCHAR NOT NULL,
    offer VARCHAR NOT NULL,
    region VARCHAR,
    as_of VARCHAR NOT NULL, -- YYYY-MM, or empty where the source shows no date
    source_url VARCHAR NOT NULL,
    note VARCHAR
);
