-- The profile imported from a file with this sha256, if any.
SELECT id, accelerator_id, imported_at FROM probe_profiles WHERE file_sha256 = $file_sha256
