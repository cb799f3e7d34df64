-- Reference tables (rebuilt from data/seed whenever the seed changes) and
-- user tables (custom entries: never touched by a reseed).
CREATE TABLE accelerators (
    id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    vendor VARCHAR NOT NULL,
    form_factor VARCHAR,
    year INTEGER,
    memory_bytes DOUBLE NOT NULL,
    bandwidth_bytes_per_s DOUBLE NOT NULL,
    peak_fp4 DOUBLE, peak_int4 DOUBLE, peak_fp6 DOUBLE, peak_fp8 DOUBLE, peak_int8 DOUBLE,
    peak_bf16 DOUBLE, peak_fp16 DOUBLE, peak_tf32 DOUBLE, peak_fp32 DOUBLE,
    power_w DOUBLE,
    scaleup_bytes_per_s DOUBLE,
    list_price_usd DOUBLE,
    sources VARCHAR NOT NULL,
    notes VARCHAR
);
CREATE TABLE custom_accelerators AS SELECT * FROM accelerators WITH NO DATA;
ALTER TABLE custom_accelerators ADD PRIMARY KEY (id);
ALTER TABLE custom_accelerators ADD COLUMN created_at TIMESTAMP DEFAULT now();

CREATE TABLE models (
    id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    family VARCHAR,
    hf_repo VARCHAR,
    config_json VARCHAR NOT NULL,
    config_source VARCHAR,
    published_total_params DOUBLE,
    total_rounding DOUBLE,
    total_convention VARCHAR,
    published_extra_params DOUBLE,
    published_active_params DOUBLE,
    active_rounding DOUBLE,
    active_convention VARCHAR,
    params_source VARCHAR,
    notes VARCHAR
);
CREATE TABLE custom_models (
    id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    config_json VARCHAR NOT NULL,
    notes VARCHAR,
    created_at TIMESTAMP DEFAULT now()
);

CREATE TABLE seed_state (sha256 VARCHAR NOT NULL, loaded_at TIMESTAMP NOT NULL);
