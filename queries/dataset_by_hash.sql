-- The dataset imported from a file with this sha256, if any.
SELECT id, name, file_name, imported_at FROM datasets WHERE file_sha256 = $file_sha256
