-- Remove one custom model.
DELETE FROM custom_models WHERE id = $id
