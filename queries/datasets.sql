-- Every imported dataset, newest first.
SELECT id, name, file_name, file_sha256, format, imported_at, row_count, context_json, notes
FROM datasets
ORDER BY imported_at DESC, id DESC
