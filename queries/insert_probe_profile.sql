-- Add one measured profile (values bound as parameters); returns its id.
INSERT INTO probe_profiles (
    accelerator_id, device_name, device_kind, backend, probed_at, imported_at, file_name, file_sha256,
    bandwidth_bytes_per_s, peak_fp32, peak_tf32, peak_bf16, peak_fp16, peak_fp8, peak_int8, document_json
)
VALUES (
    $accelerator_id, $device_name, $device_kind, $backend, $probed_at, now(), $file_name, $file_sha256,
    $bandwidth_bytes_per_s, $peak_fp32, $peak_tf32, $peak_bf16, $peak_fp16, $peak_fp8, $peak_int8, $document_json
)
RETURNING id
