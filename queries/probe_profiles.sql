-- Every measured profile, newest first (the catalogue uses each accelerator's newest).
SELECT id, accelerator_id, device_name, device_kind, backend, probed_at, imported_at, file_name, file_sha256,
       bandwidth_bytes_per_s, peak_fp32, peak_tf32, peak_bf16, peak_fp16, peak_fp8, peak_int8, document_json
FROM probe_profiles
ORDER BY imported_at DESC, id DESC
