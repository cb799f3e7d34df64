-- Add one dataset (values bound as parameters); returns its id.
INSERT INTO datasets (name, file_name, file_sha256, format, imported_at, row_count, context_json, notes)
VALUES ($name, $file_name, $file_sha256, $format, now(), $row_count, $context_json, $notes)
RETURNING id
