-- Add one custom model from its config.json text.
INSERT INTO custom_models (id, name, config_json, notes) VALUES ($id, $name, $config_json, $notes)
