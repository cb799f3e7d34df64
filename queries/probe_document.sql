-- One profile's full probe document (JSON text).
SELECT document_json FROM probe_profiles WHERE id = $id
