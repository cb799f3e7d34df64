-- Remove one dataset row (its measurements are deleted first, same transaction).
DELETE FROM datasets WHERE id = $id
