-- Remove one custom accelerator; reference rows are not in this table.
DELETE FROM custom_accelerators WHERE id = $id
