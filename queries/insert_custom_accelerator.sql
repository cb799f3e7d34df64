-- Add one custom accelerator (values bound as parameters).
INSERT INTO custom_accelerators BY NAME
SELECT $id AS id, $name AS name, $vendor AS vendor, $form_factor AS form_factor, $year AS year,
       $memory_bytes AS memory_bytes, $bandwidth_bytes_per_s AS bandwidth_bytes_per_s,
       $peak_fp4 AS peak_fp4, $peak_int4 AS peak_int4, $peak_fp6 AS peak_fp6, $peak_fp8 AS peak_fp8,
       $peak_int8 AS peak_int8, $peak_bf16 AS peak_bf16, $peak_fp16 AS peak_fp16, $peak_tf32 AS peak_tf32,
       $peak_fp32 AS peak_fp32, $power_w AS power_w, $scaleup_bytes_per_s AS scaleup_bytes_per_s,
       $list_price_usd AS list_price_usd, $sources AS sources, $notes AS notes
