"""Text clean-up before any classifier sees it: the same for every model, so outputs never crash it."""

from __future__ import annotations

from collections.abc import Iterable

REPLACEMENT = "\ufffd"


def sanitize(text: str) -> str:
    """Replace lone surrogates with U+FFFD; other text is returned as it is.

    Protobuf strings arriving from the gateway are valid UTF-8 already; strings built in Python
    (tests, the CLI) can hold lone surrogates, which onnxruntime and tokenizers refuse to encode.
    U+FFFD is not a word character, exactly as a surrogate is not, so TF-IDF tokens do not change.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(REPLACEMENT if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
    return text


def sanitize_all(texts: Iterable[str]) -> list[str]:
    return [sanitize(t) for t in texts]
