-- The measurements of one dataset, in file order (with the per-request distribution, null where the file had none).
SELECT * EXCLUDE (dataset_id) FROM measurements WHERE dataset_id = $dataset_id ORDER BY "row"
