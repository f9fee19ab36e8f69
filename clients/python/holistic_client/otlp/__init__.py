"""OpenTelemetry in: GenAI spans (OTLP/gRPC TraceService/Export) become predictions, submitted once."""
