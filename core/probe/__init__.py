"""The probe: this machine's sustained memory bandwidth and matmul throughput, as one JSON document (core.probe.document)."""
