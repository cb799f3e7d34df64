-- Rename one dataset.
UPDATE datasets SET name = $name WHERE id = $id
