"""The gateway over TLS and mutual TLS, with certificates from a throwaway CA."""

from __future__ import annotations

import grpc
import pytest

from holistic_client import ClientError
from tests.certs import make_pki
from tests.factories import batch


@pytest.fixture
def pki(tmp_path):
    return make_pki(tmp_path)


def test_tls(make_gateway, pki):
    gw = make_gateway(tls_cert=pki.server_cert, tls_key=pki.server_key)
    with gw.client(tls_ca=pki.ca) as c:
        assert c.submit(batch(2), batch_id="b1", model="m").accepted_count == 2
    with gw.client(max_attempts=1, timeout_s=3) as plaintext, pytest.raises(ClientError) as exc:
        plaintext.list_models()
    assert exc.value.code == grpc.StatusCode.UNAVAILABLE


def test_mutual_tls_needs_a_client_certificate(make_gateway, pki):
    gw = make_gateway(tls_cert=pki.server_cert, tls_key=pki.server_key, tls_client_ca=pki.ca)
    with gw.client(tls_ca=pki.ca, tls_cert=pki.client_cert, tls_key=pki.client_key) as c:
        assert c.submit(batch(1), batch_id="b1", model="m").sequence == 1
    with gw.client(tls_ca=pki.ca, max_attempts=1, timeout_s=3) as anonymous, pytest.raises(ClientError) as exc:
        anonymous.list_models()
    assert exc.value.code == grpc.StatusCode.UNAVAILABLE


def test_tls_settings_come_in_pairs(make_settings, pki):
    from holistic.errors import ConfigError

    with pytest.raises(ConfigError, match="HOLISTIC_TLS_CERT and HOLISTIC_TLS_KEY go together"):
        make_settings(tls_cert=pki.server_cert)
    with pytest.raises(ConfigError, match="mutual TLS"):
        make_settings(tls_client_ca=pki.ca)
