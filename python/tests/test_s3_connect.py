"""How mtsum reaches a store, against real servers on loopback: TLS with a certificate
authority the test makes (as a MinIO with a private CA is reached), virtual-hosted requests
(the bucket in the host name, as on AWS, resolved or through a proxy), and credentials from a
`credential_process`."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")
x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402

import mtsum  # noqa: E402
from test_s3 import (  # noqa: E402
    NO_METADATA, digests, run, start_moto, start_moto_with_users, writer_client)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any AWS setting, proxy or CA of the machine's, plus `extra`."""
    drop = ("AWS_", "SSL_CERT_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(drop)}
    env.update(AWS_METADATA_ENDPOINT=NO_METADATA, AWS_SHARED_CREDENTIALS_FILE=os.devnull,
               AWS_CONFIG_FILE=os.devnull, AWS_REGION="us-east-1")
    env.update(extra)
    return env


def make_certificates(d: Path) -> tuple[Path, Path, Path]:
    """A certificate authority, and a server certificate it signed for localhost and
    127.0.0.1: (CA's PEM, server's certificate PEM, server's key PEM)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1))

    def builder(subject: str, issuer: str, key) -> x509.CertificateBuilder:
        name = lambda cn: x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])  # noqa: E731
        return (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(valid[0]).not_valid_after(valid[1]))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (builder("mtsum test CA", "mtsum test CA", ca_key)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=True, key_cert_sign=True, crl_sign=True,
              content_commitment=False, key_encipherment=False, data_encipherment=False,
              key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (builder("localhost", "mtsum test CA", key)
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = d / "ca.pem", d / "server.pem", d / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return paths


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """moto serving HTTPS on 127.0.0.1 with a certificate of the test's own CA (any key
    signs), with the public object `s3://tls/k`: (https endpoint, CA's PEM, local copy)."""
    d = tmp_path_factory.mktemp("tls")
    ca, cert, key = make_certificates(d)
    proc, endpoint = start_moto(d, "--ssl-cert", str(cert), "--ssl-key", str(key))
    try:
        endpoint = endpoint.replace("http://", "https://")
        owner = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                             aws_access_key_id="any", aws_secret_access_key="any",
                             verify=str(ca))
        owner.create_bucket(Bucket="tls")
        body = os.urandom(9 << 20)
        owner.put_object(Bucket="tls", Key="k", Body=body, ACL="public-read")
        local = d / "k"
        local.write_bytes(body)
        yield endpoint, ca, local
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_https_endpoint_is_trusted_through_the_ca_bundle_the_user_names(mtsum_bin, tls):
    endpoint, ca, local = tls
    want = digests(run(mtsum_bin, str(local)))
    url = "s3://tls/k"
    ways = [
        (["--ca-bundle", str(ca)], {}),
        ([], {"AWS_CA_BUNDLE": str(ca)}),
        # Replaces the system's CAs, as for curl and Python's ssl module.
        ([], {"SSL_CERT_FILE": str(ca)}),
    ]
    for args, env in ways:
        out = run(mtsum_bin, "--endpoint-url", endpoint, *args, url,
                  env=clean_env(AWS_ACCESS_KEY_ID="any", AWS_SECRET_ACCESS_KEY="any", **env))
        assert out.returncode == 0, (args, env, out.stderr)
        assert digests(out) == want, (args, env)
    options = {"key": "any", "secret": "any", "endpoint_url": endpoint,
               "client_kwargs": {"verify": str(ca)}}
    assert mtsum.file_digest(url, storage_options=options) == mtsum.file_digest(local)


def test_an_https_url_is_read_through_the_ca_bundle(mtsum_bin, tls):
    endpoint, ca, local = tls
    url = f"{endpoint}/tls/k"
    out = run(mtsum_bin, "--ca-bundle", str(ca), "-t", "plain", url, env=clean_env())
    assert out.returncode == 0, out.stderr
    assert digests(out) == digests(run(mtsum_bin, "-t", "plain", str(local)))


def test_an_untrusted_certificate_is_one_line_naming_the_url(mtsum_bin, tls, tmp_path):
    endpoint, ca, local = tls
    keys = {"AWS_ACCESS_KEY_ID": "any", "AWS_SECRET_ACCESS_KEY": "any"}
    for url, args in [("s3://tls/k", ["--endpoint-url", endpoint]), (f"{endpoint}/tls/k", [])]:
        out = run(mtsum_bin, *args, url, str(local), env=clean_env(**keys))
        assert out.returncode == 1
        lines = out.stderr.splitlines()
        assert len(lines) == 1, out.stderr
        assert lines[0].startswith(f"mtsum: {url}: certificate not trusted ("), out.stderr
        assert "--ca-bundle" in lines[0]
        assert digests(out) == digests(run(mtsum_bin, str(local))), "the file is still hashed"
    missing = tmp_path / "missing.pem"
    out = run(mtsum_bin, "--ca-bundle", str(missing), f"{endpoint}/tls/k", env=clean_env())
    assert (out.returncode, out.stderr) == (
        1, f"mtsum: {endpoint}/tls/k: CA bundle {missing}: No such file or directory\n")


def with_hosts(names: Path) -> list[str] | None:
    """The command prefix that runs a command with `names` as its /etc/hosts: a mount
    namespace of its own (in a user namespace, so that no privilege is needed), where the
    file is bound over /etc/hosts; the machine's is untouched. None where the kernel or a
    sandbox refuses such namespaces."""
    prefix = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
              'mount --bind "$0" /etc/hosts && exec "$@"', str(names)]
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True)
    except FileNotFoundError:
        return None
    return prefix if probe.returncode == 0 else None


@pytest.mark.parametrize("through", ["resolver", "proxy"])
def test_virtual_hosted_requests_name_the_bucket_in_the_host(
        mtsum_bin, tmp_path, monkeypatch, through):
    # The host of a virtual-hosted request is BUCKET.localhost, which glibc does not resolve
    # (no `myhostname` in nsswitch.conf here), and the test may not edit the machine's
    # /etc/hosts. Either mtsum runs with an /etc/hosts of its own that names the host
    # (`resolver`: as a real store's name resolves), or the requests go through an HTTP proxy
    # (`proxy`: as HTTP_PROXY names one to curl and mtsum alike), and the proxy is moto
    # itself, which takes a request in proxy form (`GET http://BUCKET.localhost:PORT/KEY`).
    # Either way moto finds the bucket in the host as S3 does, and checks the signature made
    # over that host.
    proc, endpoint, keys = start_moto_with_users(tmp_path)
    try:
        port = endpoint.rsplit(":", 1)[1]
        key, secret = keys["writer"]
        writer = writer_client(endpoint, keys, "vhost")
        data = os.urandom((8 << 20) + 5)
        writer.put_object(Bucket="vhost", Key="dir/k", Body=data)
        local = tmp_path / "k"
        local.write_bytes(data)
        env = clean_env(AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
        prefix = []
        if through == "proxy":
            env["HTTP_PROXY"] = endpoint
        else:
            hosts = tmp_path / "hosts"
            hosts.write_text("127.0.0.1 localhost vhost.localhost\n::1 localhost\n")
            prefix = with_hosts(hosts)
            if prefix is None:
                pytest.skip("no mount namespace of its own (unshare refused) for an /etc/hosts "
                            "that names vhost.localhost")
        localhost = f"http://localhost:{port}"
        args = ["--endpoint-url", localhost, "--addressing-style", "virtual"]
        want = digests(run(mtsum_bin, str(local)))
        out = run(*prefix, mtsum_bin, *args, "s3://vhost/dir/k", env=env)
        assert out.returncode == 0, out.stderr
        assert digests(out) == want
        out = run(*prefix, mtsum_bin, *args, "-r", "s3://vhost/dir/", env=env)
        assert (out.returncode, digests(out)) == (0, want), out.stderr
        if through == "proxy":
            monkeypatch.setenv("HTTP_PROXY", endpoint)
            options = {"key": key, "secret": secret, "endpoint_url": localhost,
                       "region": "us-east-1", "addressing_style": "virtual"}
            assert mtsum.file_digest("s3://vhost/dir/k", storage_options=options) == \
                mtsum.file_digest(local)
        log = (tmp_path / "log").read_text()
        # A proxy is sent the whole URL; a server reached directly, the path and a Host.
        shown = f"http://vhost.localhost:{port}/dir/k" if through == "proxy" else "/dir/k"
        assert f"GET {shown} " in log, log
        assert f"HEAD {shown} " in log, log
        assert "GET /vhost/" not in log and "HEAD /vhost/" not in log, "none path-style"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_credentials_come_from_a_profiles_credential_process(mtsum_bin, tmp_path):
    # The process prints the writer's keys as the AWS CLI expects them, and notes each run:
    # one run serves every object of the run.
    proc, endpoint, keys = start_moto_with_users(tmp_path)
    try:
        key, secret = keys["writer"]
        writer = writer_client(endpoint, keys, "proc")
        for name in ["a", "b"]:
            writer.put_object(Bucket="proc", Key=name, Body=name.encode() * 1000)
        runs = tmp_path / "runs"
        script = tmp_path / "creds.py"
        script.write_text(
            "import json, sys\n"
            f"open({str(runs)!r}, 'a').write('run\\n')\n"
            "if sys.argv[1:] == ['fail']:\n"
            "    sys.exit('no session: log in first')\n"
            f"print(json.dumps({{'Version': 1, 'AccessKeyId': {key!r}, "
            f"'SecretAccessKey': {secret!r}, 'Expiration': '2999-01-01T00:00:00Z'}}))\n")
        config = tmp_path / "config"
        config.write_text(
            f"[profile tool]\ncredential_process = {sys.executable} {script}\n"
            f"region = us-east-1\nendpoint_url = {endpoint}\n\n"
            f"[profile broken]\ncredential_process = {sys.executable} {script} fail\n"
            f"region = us-east-1\nendpoint_url = {endpoint}\n")
        env = clean_env(AWS_CONFIG_FILE=str(config))
        out = run(mtsum_bin, "--profile", "tool", "-a", "md5", "-t", "plain",
                  "s3://proc/a", "s3://proc/b", env=env)
        assert out.returncode == 0, out.stderr
        assert digests(out) == [hashlib.md5(n.encode() * 1000).hexdigest()
                                for n in ["a", "b"]]
        assert runs.read_text() == "run\n"
        out = run(mtsum_bin, "s3://proc/a", env=dict(env, AWS_PROFILE="broken"))
        assert out.returncode == 1
        assert out.stderr == (
            "mtsum: s3://proc/a: credential_process: it failed (exit status: 1): "
            "no session: log in first\n")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
