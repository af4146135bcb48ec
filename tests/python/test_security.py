"""Tokens and TLS: the client sends the token as the command line does, is refused without it or
with a wrong one, and talks TLS to a server whose certificate a test CA signed."""
import subprocess

import pytest

import fusetune
from conftest import CHAIN, eventually, start_farm

CLIENT_TOKEN = "client-secret-123"
WORKER_TOKEN = "worker-secret-456"


@pytest.fixture(scope="module")
def token_farm(binary, tmp_path_factory):
    directory = tmp_path_factory.mktemp("tokens")
    (directory / "token").write_text(CLIENT_TOKEN + "\n")
    (directory / "worker-token").write_text(WORKER_TOKEN)
    farm = start_farm(tmp_path_factory, "token-farm",
                      serve_args=["--token-file", str(directory / "token"),
                                  "--worker-token-file", str(directory / "worker-token")],
                      worker_args=["--synthetic", "--token-file",
                                   str(directory / "worker-token")])
    farm.token_file = str(directory / "token")
    yield farm
    farm.stop()


def test_a_missing_token_is_refused(token_farm):
    with fusetune.Client(token_farm.address) as client:
        with pytest.raises(fusetune.UnauthenticatedError, match="needs a client token") as e:
            client.workers()
        assert e.value.code.name == "UNAUTHENTICATED"
        with pytest.raises(fusetune.UnauthenticatedError):
            client.tune(CHAIN)


def test_a_wrong_token_is_refused(token_farm):
    for token in ("wrong", WORKER_TOKEN, CLIENT_TOKEN + "x"):
        with fusetune.Client(token_farm.address, token=token) as client:
            with pytest.raises(fusetune.UnauthenticatedError, match="the client token is wrong"):
                client.tasks()


def test_the_right_token_from_a_file_or_a_string(token_farm):
    with fusetune.Client(token_farm.address, token_file=token_farm.token_file) as client:
        eventually(client.workers, 20, "the worker to register")
        report = client.tune(CHAIN)
        assert report.target == "synthetic"
    with fusetune.Client(token_farm.address, token=CLIENT_TOKEN) as client:
        (stored,) = client.query(CHAIN).regions
        assert (stored.signature, stored.plan) == (report.regions[0].signature,
                                                   report.regions[0].plan)
        assert repr(client) == f"Client('{token_farm.address}', token)"
        assert CLIENT_TOKEN not in repr(client)


def test_token_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        fusetune.Client("127.0.0.1:1", token="a", token_file="b")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        fusetune.Client("127.0.0.1:1", token_file=str(empty))
    two = tmp_path / "two"
    two.write_text("a\nb\n")
    with pytest.raises(ValueError, match="more than one line"):
        fusetune.Client("127.0.0.1:1", token_file=str(two))
    with pytest.raises(FileNotFoundError):
        fusetune.Client("127.0.0.1:1", token_file=str(tmp_path / "absent"))


@pytest.fixture(scope="module")
def tls_farm(binary, tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    cert, key = str(directory / "cert.pem"), str(directory / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
        check=True, capture_output=True)
    farm = start_farm(tmp_path_factory, "tls-farm",
                      serve_args=["--tls-cert", cert, "--tls-key", key],
                      worker_args=["--synthetic", "--tls-ca", cert])
    farm.cert = cert
    yield farm
    farm.stop()


def test_tls_with_a_test_ca(tls_farm):
    with fusetune.Client(tls_farm.address, tls_ca=tls_farm.cert) as client:
        assert repr(client) == f"Client('{tls_farm.address}', tls)"
        eventually(client.workers, 20, "the worker to register")
        report = client.tune(CHAIN.replace("(32, 64)", "(8, 64)"))
        assert report.target == "synthetic" and len(report.regions) == 1
        cli = tls_farm.cli_json("query", "--tls-ca", tls_farm.cert,
                                tls_farm.write("chain.relay", CHAIN.replace("(32, 64)", "(8, 64)")))
        assert client.query(CHAIN.replace("(32, 64)", "(8, 64)")).to_dict() == cli | {
            "graph": "graph"}
    with open(tls_farm.cert, "rb") as f:
        with fusetune.Client(tls_farm.address, tls_ca=f.read()) as client:
            assert [w.target for w in client.workers()] == ["synthetic"]


def test_plain_text_cannot_talk_to_a_tls_server(tls_farm):
    with fusetune.Client(tls_farm.address, timeout=5) as client:
        with pytest.raises(fusetune.UnavailableError, match="cannot reach the server at"):
            client.workers()
