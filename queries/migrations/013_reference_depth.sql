-- Evidence: the tokens already in the KV cache before a published figure's own
-- (llama-bench's '@ dN'): a prompt prefilled over them, or generation at that
-- depth; the ceiling and the prediction take them (core.evidence.compare).
ALTER TABLE reference_measurements ADD COLUMN depth BIGINT;
