-- Predicted model: each accelerator names its architecture generation (Hopper,
-- Blackwell, CDNA 3 ...), the family whose measured efficiencies a prediction
-- borrows from; custom accelerators may name one too.
ALTER TABLE accelerators ADD COLUMN architecture VARCHAR;
ALTER TABLE custom_accelerators ADD COLUMN architecture VARCHAR;
