-- The accelerator's scale-out bandwidth: network (InfiniBand / RoCE /
-- Ethernet) bytes per second per device, per direction, to devices outside
-- its scale-up domain in the vendor's reference system, declared in
-- core/catalogue/specs.py; empty where no cited source prints it.
ALTER TABLE accelerators ADD COLUMN scaleout_bytes_per_s DOUBLE;
ALTER TABLE custom_accelerators ADD COLUMN scaleout_bytes_per_s DOUBLE;
