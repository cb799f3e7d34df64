-- The accelerator's memory technology (HBM3e, GDDR6 ...), declared in
-- core/catalogue/specs.py; empty where no cited source prints it.
ALTER TABLE accelerators ADD COLUMN memory_type VARCHAR;
ALTER TABLE custom_accelerators ADD COLUMN memory_type VARCHAR;
