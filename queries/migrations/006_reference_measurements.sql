-- Evidence (issue 13): published measurements shipped with the app
-- (data/seed/reference_measurements.csv, format in REFERENCE_FORMAT.md), a
-- read-only reference table rebuilt with the seed like the catalogue; user
-- datasets live in `datasets` / `measurements` and never mix with it.
CREATE TABLE reference_measurements (
    id VARCHAR PRIMARY KEY,
    source_url VARCHAR NOT NULL,
    publisher VARCHAR NOT NULL,
    framework VARCHAR NOT NULL,
    framework_version VARCHAR,
    gpu VARCHAR NOT NULL,
    num_gpus BIGINT NOT NULL,
    tp BIGINT,
    ep BIGINT,
    model VARCHAR NOT NULL,
    weights VARCHAR NOT NULL,
    kv VARCHAR NOT NULL,
    compute VARCHAR,
    batch BIGINT, -- NULL only for a max-load figure that prints no batch
    batch_kind VARCHAR NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    scope VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    value DOUBLE NOT NULL, -- as printed, in `unit`
    unit VARCHAR NOT NULL,
    value_si DOUBLE NOT NULL, -- tokens/s of the whole system, tokens/s per user, or seconds
    model_bytes BIGINT, -- the model file's size where the source prints it (llama-bench "size")
    source_date VARCHAR,
    read_on DATE NOT NULL,
    note VARCHAR
);
