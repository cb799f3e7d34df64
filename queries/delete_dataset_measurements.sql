-- Remove the measurements of one dataset (run with delete_dataset in one transaction).
DELETE FROM measurements WHERE dataset_id = $id
