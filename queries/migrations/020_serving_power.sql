-- Published GPU power and energy of LLM serving (issue 28): data/seed/serving_power.csv, read-only and rebuilt with
-- the seed (core/catalogue/serving_power.py says what each column holds).
CREATE TABLE serving_power (
    id VARCHAR PRIMARY KEY,
    source_url VARCHAR NOT NULL,
    publisher VARCHAR NOT NULL,
    gpu VARCHAR NOT NULL,
    num_gpus BIGINT NOT NULL,
    model VARCHAR,
    model_name VARCHAR,
    framework VARCHAR,
    phase VARCHAR,
    batch BIGINT,
    request_rate_per_s DOUBLE,
    metric VARCHAR NOT NULL,
    value DOUBLE NOT NULL,
    unit VARCHAR NOT NULL,
    statistic VARCHAR,
    source_date VARCHAR,
    read_on VARCHAR NOT NULL,
    quote VARCHAR NOT NULL,
    note VARCHAR
);
