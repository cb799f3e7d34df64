-- Imported benchmark results: one dataset per imported file, its measurements
-- in SI units (user data: never touched by a reseed).
CREATE SEQUENCE datasets_id_seq START 1;
CREATE TABLE datasets (
    id INTEGER PRIMARY KEY DEFAULT nextval('datasets_id_seq'),
    name VARCHAR NOT NULL,
    file_name VARCHAR NOT NULL,
    file_sha256 VARCHAR NOT NULL UNIQUE,
    format VARCHAR NOT NULL,
    imported_at TIMESTAMP NOT NULL,
    row_count INTEGER NOT NULL,
    context_json VARCHAR NOT NULL,
    notes VARCHAR NOT NULL
);
CREATE TABLE measurements (
    dataset_id INTEGER NOT NULL,
    "row" INTEGER NOT NULL,
    gpu VARCHAR NOT NULL,
    num_gpus INTEGER NOT NULL,
    model VARCHAR NOT NULL,
    weights VARCHAR NOT NULL,
    kv VARCHAR NOT NULL,
    compute VARCHAR,
    phase VARCHAR NOT NULL,
    batch INTEGER NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    tokens_per_s DOUBLE NOT NULL,
    ttft_s DOUBLE,
    tpot_s DOUBLE,
    source_gpu VARCHAR,
    source_model VARCHAR
);
