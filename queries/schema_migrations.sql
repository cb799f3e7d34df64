-- The numbered migrations applied to this store.
SELECT version, name, applied_at FROM schema_migrations ORDER BY version
