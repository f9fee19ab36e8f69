"""holistic: continuous, HELM-style holistic evaluation of language-model traffic."""

__version__ = "0.1.0"
