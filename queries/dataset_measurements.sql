-- The measurements of one dataset, in file order.
SELECT * EXCLUDE (dataset_id) FROM measurements WHERE dataset_id = $dataset_id ORDER BY "row"
