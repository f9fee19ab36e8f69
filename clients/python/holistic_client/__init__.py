"""Python client for the holistic gateway: submit predictions, read and watch profiles."""

from holistic_client.client import Client, ClientError, InvalidPredictions, SubmitReport
from holistic_client.jsonl import read_predictions

__all__ = ["Client", "ClientError", "InvalidPredictions", "SubmitReport", "read_predictions"]
