"""Text classifiers for the toxicity and bias families: a model is a directory (docs/metrics.md: Classifier models).

Run time needs only numpy, onnxruntime and tokenizers. Building the bundled default model
(convert_profanity) and exporting Detoxify checkpoints (export_detoxify) need the `export` extra.
"""
