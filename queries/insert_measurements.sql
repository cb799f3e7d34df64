-- Copy the validated rows registered as `import_rows` into one dataset.
INSERT INTO measurements BY NAME
SELECT $dataset_id AS dataset_id, * FROM import_rows
