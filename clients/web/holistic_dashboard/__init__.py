"""The live web dashboard: a small aiohttp server between the browser and the gateway's gRPC API."""
