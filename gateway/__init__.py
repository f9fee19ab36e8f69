"""The gRPC gateway: validation, auth, backpressure, ingest to the work stream, profile reads."""
