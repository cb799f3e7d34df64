-- Evidence: each published measurement names its publisher's campaign (one
-- article, one submission, one performance page, whatever its URLs); the
-- scorecard holds out one campaign at a time, so no campaign predicts itself.
ALTER TABLE reference_measurements ADD COLUMN campaign VARCHAR;
