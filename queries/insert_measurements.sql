-- Copy the validated rows registered as `import_rows` into one dataset (by
-- column name: the per-request distribution columns of migration 007 included).
INSERT INTO measurements BY NAME
SELECT $dataset_id AS dataset_id, * FROM import_rows
