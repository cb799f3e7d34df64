-- Evidence: why a published measurement is left out of the scorecard and the
-- fit (its scenario is not known as run), where it is; empty: scored.
ALTER TABLE reference_measurements ADD COLUMN unscored VARCHAR;
