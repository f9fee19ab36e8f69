"""PII kept out: the gateway replaces it in a batch's text before anything of the batch is written.

Presidio's pattern recognizers do the finding (emails, phone numbers via Google's phonenumbers,
credit cards with the Luhn check, IBANs with their checksum, IPv4/IPv6), plus one PatternRecognizer
per team pattern (HOLISTIC_REDACT_PATTERNS); its anonymizer does the replacing. No NLP model runs:
the analyzer gets an NlpEngine that finds nothing (Presidio's default would load a spaCy model),
and the email check reads tldextract's bundled suffix list, never the network.

A text is analysed only for the entities a cheap test says it could hold (an '@' for an email, five
digits for a phone number, 12 for a card, a country code and two digits for an IBAN, a dotted quad or
two colons for an IP address; a team pattern's own search): most texts cost a few regex searches. The
five digits also keep years out: Presidio's phone recognizer alone takes "1686" for a phone number.

The batch's tag (`on:v1:<hash>`) names the configuration and goes into the envelope, so each worker
records it in the signature of the families whose scores it can change, whatever the worker's settings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import tldextract
from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
from presidio_analyzer.nlp_engine import NlpArtifacts, NlpEngine
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
)
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import OperatorConfig

from holistic.settings import Settings
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest

VERSION = "v1"  # bump when what a configuration finds changes (a library upgrade that finds more)
LANGUAGE = "en"  # the pattern recognizers are language-agnostic; Presidio wants one name
# what a text must hold before an entity's recognizer can find anything in it (looser than the recognizer)
_MAY_HOLD = {
    "EMAIL_ADDRESS": re.compile(r"@"),
    "PHONE_NUMBER": re.compile(r"\d(?:[\s().\-/]*\d){4}"),  # five digits at least: a year is no phone number
    "CREDIT_CARD": re.compile(r"\d(?:[\s\-]*\d){11}"),  # 12 digits at least
    "IBAN_CODE": re.compile(r"[A-Za-z]{2}\d{2}"),  # country code, check digits
    "IP_ADDRESS": re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[0-9A-Fa-f]*:[0-9A-Fa-f]*:"),
}
_OFFLINE_SUFFIXES = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)  # the bundled list only


class _NoNlp(NlpEngine):
    """An NLP engine that finds nothing: the pattern recognizers need no model."""

    def load(self) -> None:
        pass

    def is_loaded(self) -> bool:
        return True

    def process_text(self, text: str, language: str) -> NlpArtifacts:
        return NlpArtifacts(entities=[], tokens=[], tokens_indices=[], lemmas=[], nlp_engine=self, language=language)

    def process_batch(self, texts: Any, language: str, **kwargs: Any) -> Iterator[tuple[str, NlpArtifacts]]:
        for text in texts:
            yield text, self.process_text(text, language)

    def is_stopword(self, word: str, language: str) -> bool:
        return False

    def is_punct(self, word: str, language: str) -> bool:
        return False

    def get_supported_entities(self) -> list[str]:
        return []

    def get_supported_languages(self) -> list[str]:
        return [LANGUAGE]


class _OfflineEmail(EmailRecognizer):
    """Presidio's email recognizer, its domain check on the suffix list shipped with tldextract
    (the default extractor fetches the list from the network first)."""

    def validate_result(self, pattern_text: str) -> bool:
        return _OFFLINE_SUFFIXES(pattern_text).fqdn != ""


_BUILTIN = {
    "EMAIL_ADDRESS": _OfflineEmail,
    "PHONE_NUMBER": PhoneRecognizer,
    "CREDIT_CARD": CreditCardRecognizer,
    "IBAN_CODE": IbanRecognizer,
    "IP_ADDRESS": IpRecognizer,
}


def tag_of(settings: Settings) -> str:
    """The configuration's name in the envelope and signatures; "" when redaction is off."""
    if settings.redact != "on":
        return ""
    what = {"entities": sorted(settings.redact_entities), "patterns": settings.redact_patterns}
    what["format"] = settings.redact_format  # type: ignore[assignment]
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:12]
    return f"on:{VERSION}:{digest}"


class Redactor:
    def __init__(self, settings: Settings) -> None:
        self.tag = tag_of(settings)
        registry = RecognizerRegistry(supported_languages=[LANGUAGE])
        for entity in settings.redact_entities:
            registry.add_recognizer(_BUILTIN[entity](supported_language=LANGUAGE))
        checks = {entity: _MAY_HOLD[entity] for entity in settings.redact_entities}
        checks.update((name, re.compile(pattern)) for name, pattern in settings.redact_patterns.items())
        self._checks = list(checks.items())
        for name, pattern in settings.redact_patterns.items():
            team = PatternRecognizer(name, patterns=[Pattern(name, pattern, 1.0)], supported_language=LANGUAGE)
            registry.add_recognizer(team)
        self._analyzer = AnalyzerEngine(registry=registry, nlp_engine=_NoNlp(), supported_languages=[LANGUAGE])
        self._anonymizer = AnonymizerEngine()
        entities = [*settings.redact_entities, *settings.redact_patterns]
        fmt = settings.redact_format
        self._operators = {e: OperatorConfig("replace", {"new_value": fmt.format(entity=e)}) for e in entities}

    def text(self, text: str) -> str:
        """text with every configured entity replaced (the same text when there is none)."""
        if not text:
            return text
        maybe = [entity for entity, check in self._checks if check.search(text)]
        if not maybe:
            return text
        found = self._analyzer.analyze(text, language=LANGUAGE, entities=maybe)
        # a found span must itself pass its entity's test (a year beside a phone number stays a year)
        found = [
            f for f in found if f.entity_type not in _MAY_HOLD or _MAY_HOLD[f.entity_type].search(text[f.start : f.end])
        ]
        if not found:
            return text
        return self._anonymizer.anonymize(text, found, self._operators).text  # type: ignore[arg-type]

    def request(self, request: SubmitPredictionsRequest) -> bool:
        """Redact the request's texts in place: input, output, references, source, metadata values and
        ranking documents' model_output. True when something was replaced."""
        changed = False
        for p in request.predictions:
            for name in ("input", "output"):
                before = getattr(p, name)
                after = self.text(before)
                if after != before:
                    setattr(p, name, after)
                    changed = True
            if p.HasField("source"):
                after = self.text(p.source)
                if after != p.source:
                    p.source, changed = after, True
            for i, ref in enumerate(p.references):
                after = self.text(ref)
                if after != ref:
                    p.references[i], changed = after, True
            for key, value in list(p.metadata.items()):
                after = self.text(value)
                if after != value:
                    p.metadata[key], changed = after, True
            for doc in p.ranking.documents:
                if doc.HasField("model_output"):
                    after = self.text(doc.model_output)
                    if after != doc.model_output:
                        doc.model_output, changed = after, True
        return changed
