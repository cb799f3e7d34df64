-- Measured profiles from the probe (core.probe): one per imported probe
-- document, attached to a catalogue accelerator (reference or custom) and
-- kept beside its datasheet figures, never replacing them. User data: a
-- reseed never touches it.
CREATE SEQUENCE probe_profiles_id_seq START 1;
CREATE TABLE probe_profiles (
    id INTEGER PRIMARY KEY DEFAULT nextval('probe_profiles_id_seq'),
    accelerator_id VARCHAR NOT NULL,
    device_name VARCHAR NOT NULL,
    device_kind VARCHAR NOT NULL,
    backend VARCHAR NOT NULL,
    probed_at VARCHAR NOT NULL,
    imported_at TIMESTAMP NOT NULL,
    file_name VARCHAR NOT NULL,
    file_sha256 VARCHAR NOT NULL UNIQUE,
    bandwidth_bytes_per_s DOUBLE NOT NULL,
    peak_fp32 DOUBLE,
    peak_tf32 DOUBLE,
    peak_bf16 DOUBLE,
    peak_fp16 DOUBLE,
    peak_fp8 DOUBLE,
    peak_int8 DOUBLE,
    document_json VARCHAR NOT NULL
);
