-- Add custom accelerators: the frame `rows` holds one validated row per accelerator, in store columns.
INSERT INTO custom_accelerators BY NAME SELECT * FROM rows
