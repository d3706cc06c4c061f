"""Credentials of AWS IAM Identity Center (SSO) profiles, as `aws configure sso` writes them
and `aws sso login` caches their token: against moto on loopback (authentication on), and a
small SSO portal on loopback (`AWS_ENDPOINT_URL_SSO`) that checks the bearer token and hands
out the temporary credentials of a role of moto's account, as the real portal does; the same
server renews tokens as the SSO OIDC service does (`AWS_ENDPOINT_URL_SSO_OIDC`, CreateToken
with a refresh token)."""

from __future__ import annotations

import datetime
import hashlib
import http.server
import json
import os
import threading
import urllib.parse

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

import mtsum  # noqa: E402
from test_s3 import digests, run, start_moto_with_users, writer_client  # noqa: E402
from test_s3_connect import clean_env  # noqa: E402

ACCOUNT = "123456789012"  # moto's account
ROLE = "DataReader"


def in_hours(hours: float) -> str:
    """A time as `aws sso login` writes a token's expiry."""
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=hours)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


class Portal(http.server.ThreadingHTTPServer):
    """GetRoleCredentials on loopback: a token it knows gets `credentials` for ROLE of
    ACCOUNT (401 for any other token, 403 for any other role), after `unavailable` answers
    503 Service Unavailable; each request is noted."""

    def __init__(self, tokens: set[str], credentials: dict):
        self.tokens, self.credentials, self.asked = tokens, credentials, []
        self.unavailable = 0
        # CreateToken: a refresh token it takes -> the access token and refresh token it gives.
        self.refreshes: dict[str, tuple[str, str]] = {}
        super().__init__(("127.0.0.1", 0), PortalHandler)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class PortalHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        portal: Portal = self.server
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        token = self.headers.get("x-amz-sso_bearer_token")
        portal.asked.append((url.path, query, token))
        if portal.unavailable > 0:
            portal.unavailable -= 1
            status, body = 503, {"message": "Service Unavailable"}
        elif url.path != "/federation/credentials" or token not in portal.tokens:
            status, body = 401, {"message": "Session token not found or invalid"}
        elif query != {"role_name": ROLE, "account_id": ACCOUNT}:
            status, body = 403, {"message": "No access"}
        else:
            status, body = 200, {"roleCredentials": portal.credentials}
        self.reply(status, body)

    def do_POST(self):
        """CreateToken of the SSO OIDC service: a refresh token it knows, of the client
        `cli-client`, gets a new access token (which the portal then takes) for 8 hours."""
        portal: Portal = self.server
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        portal.asked.append((self.path, asked, None))
        given = portal.refreshes.get(asked.get("refreshToken"))
        if (self.path != "/token" or asked.get("grantType") != "refresh_token"
                or asked.get("clientId") != "cli-client" or given is None):
            status, body = 400, {"error": "invalid_grant"}
        else:
            portal.tokens.add(given[0])
            status, body = 200, {"accessToken": given[0], "expiresIn": 8 * 3600,
                                 "refreshToken": given[1], "tokenType": "Bearer"}
        self.reply(status, body)

    def reply(self, status: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def sso(tmp_path_factory):
    """moto with the objects s3://sso/a and s3://sso/b, and a portal whose credentials are
    those of the role ROLE assumed through moto's STS (so moto refuses them without their
    session token): (moto's endpoint, the portal, {key: bytes})."""
    d = tmp_path_factory.mktemp("sso")
    proc, endpoint, keys = start_moto_with_users(d)
    try:
        writer = writer_client(endpoint, keys, "sso")
        bodies = {name: name.encode() * 1000 for name in ["a", "b"]}
        for name, body in bodies.items():
            writer.put_object(Bucket="sso", Key=name, Body=body)
        key, secret = keys["writer"]
        as_writer = dict(endpoint_url=endpoint, region_name="us-east-1",
                         aws_access_key_id=key, aws_secret_access_key=secret)
        iam = boto3.client("iam", **as_writer)
        iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:user/writer"},
                "Action": "sts:AssumeRole"}]}))
        iam.put_role_policy(RoleName=ROLE, PolicyName="read", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        assumed = boto3.client("sts", **as_writer).assume_role(
            RoleArn=f"arn:aws:iam::{ACCOUNT}:role/{ROLE}", RoleSessionName="sso")
        c = assumed["Credentials"]
        credentials = {
            "accessKeyId": c["AccessKeyId"], "secretAccessKey": c["SecretAccessKey"],
            "sessionToken": c["SessionToken"],
            "expiration": int(c["Expiration"].timestamp() * 1000)}
        portal = Portal({"corp-token", "legacy-token"}, credentials)
        thread = threading.Thread(target=portal.serve_forever, daemon=True)
        thread.start()
        try:
            yield endpoint, portal, bodies
        finally:
            portal.shutdown()
            portal.server_close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def login(home, name: str, token: str, expires: str, refresh: str | None = None):
    """The token `aws sso login` caches for the session (or legacy start URL) `name`, with
    the client registration and refresh token it caches for a session: the file's path."""
    cache = home / ".aws" / "sso" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    cached = {"startUrl": "https://corp.awsapps.com/start", "region": "eu-west-1",
              "accessToken": token, "expiresAt": expires}
    if refresh:
        cached.update(clientId="cli-client", clientSecret="cli-secret", refreshToken=refresh,
                      registrationExpiresAt=in_hours(24 * 90))
    path = cache / f"{hashlib.sha1(name.encode()).hexdigest()}.json"
    path.write_text(json.dumps(cached))
    return path


def sso_home(tmp_path, endpoint: str, portal: Portal) -> dict[str, str]:
    """A home with the profiles `aws configure sso` writes, and the environment of a user of
    it: `dev` (a session, `corp`, logged in), `old` (legacy, logged in), `late` (a session whose
    token expired), `new` (a session never logged in), `revoked` (a token the portal no longer
    takes) and `denied` (a role the user may not take)."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    s3 = f"region = us-east-1\nendpoint_url = {endpoint}\n"
    role = f"sso_account_id = {ACCOUNT}\nsso_role_name = {ROLE}\n"
    sessions = {"dev": "corp", "late": "stale", "new": "never", "revoked": "gone"}
    config = "".join(
        f"[profile {p}]\nsso_session = {s}\n{role}{s3}\n"
        f"[sso-session {s}]\nsso_start_url = https://{s}.awsapps.com/start\n"
        "sso_region = eu-west-1\nsso_registration_scopes = sso:account:access\n\n"
        for p, s in sessions.items())
    config += (f"[profile old]\nsso_start_url = https://legacy.awsapps.com/start\n"
               f"sso_region = us-east-1\n{role}{s3}\n"
               f"[profile denied]\nsso_session = corp\nsso_account_id = {ACCOUNT}\n"
               f"sso_role_name = Admin\n{s3}\n")
    (home / ".aws" / "config").write_text(config)
    login(home, "corp", "corp-token", in_hours(8))
    login(home, "https://legacy.awsapps.com/start", "legacy-token", in_hours(1))
    login(home, "stale", "corp-token", in_hours(-1))
    login(home, "gone", "revoked-token", in_hours(8))
    return clean_env(HOME=str(home), AWS_CONFIG_FILE=str(home / ".aws" / "config"),
                     AWS_ENDPOINT_URL_SSO=portal.endpoint,
                     AWS_ENDPOINT_URL_SSO_OIDC=portal.endpoint)


def test_an_sso_profile_reads_with_the_role_credentials_of_its_cached_token(
        mtsum_bin, sso, tmp_path):
    endpoint, portal, bodies = sso
    env = sso_home(tmp_path, endpoint, portal)
    want = [hashlib.md5(body).hexdigest() for body in bodies.values()]
    for profile, token in [("dev", "corp-token"), ("old", "legacy-token")]:
        portal.asked.clear()
        out = run(mtsum_bin, "--profile", profile, "-a", "md5", "-t", "plain",
                  "s3://sso/a", "s3://sso/b", env=env)
        assert (out.returncode, out.stderr) == (0, ""), profile
        assert digests(out) == want, profile
        # Once for the run, with the token of the profile's session.
        assert portal.asked == [("/federation/credentials",
                                 {"role_name": ROLE, "account_id": ACCOUNT}, token)], profile
    # The listing and the HEADs of --stored are signed with the same credentials.
    out = run(mtsum_bin, "--profile", "dev", "--stored", "s3://sso/", env=env)
    assert (out.returncode, out.stderr) == (0, "")
    etags = [line for line in out.stdout.splitlines() if line.startswith("MD5 ")]
    assert etags == [f"MD5 ({name}) = {md5}" for name, md5 in zip(bodies, want)], out.stdout


def test_a_portal_that_is_unavailable_for_a_moment_is_asked_again(mtsum_bin, sso, tmp_path):
    endpoint, portal, bodies = sso
    env = sso_home(tmp_path, endpoint, portal)
    portal.asked.clear()
    portal.unavailable = 2
    out = run(mtsum_bin, "--profile", "dev", "-a", "md5", "-t", "plain", "s3://sso/a", env=env)
    assert (out.returncode, out.stderr) == (0, "")
    assert digests(out) == [hashlib.md5(bodies["a"]).hexdigest()]
    assert len(portal.asked) == 3


def test_role_credentials_that_expire_within_five_minutes_are_asked_for_again(
        mtsum_bin, sso, tmp_path):
    endpoint, portal, bodies = sso
    env = sso_home(tmp_path, endpoint, portal)
    usual = portal.credentials["expiration"]
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=4)
    portal.credentials["expiration"] = int(soon.timestamp() * 1000)
    portal.asked.clear()
    try:
        out = run(mtsum_bin, "--profile", "dev", "--connections", "1", "-t", "plain",
                  "s3://sso/a", "s3://sso/b", env=env)
    finally:
        portal.credentials["expiration"] = usual
    assert out.returncode == 0, out.stderr
    # Each request (a HEAD and a GET per object) asks anew.
    assert len(portal.asked) >= 4, portal.asked


def test_an_expired_or_missing_sso_token_is_one_line_that_says_to_log_in(
        mtsum_bin, sso, tmp_path):
    endpoint, portal, _ = sso
    env = sso_home(tmp_path, endpoint, portal)
    for profile, session in [("late", "stale"), ("new", "never"), ("revoked", "gone")]:
        out = run(mtsum_bin, "s3://sso/a", env=dict(env, AWS_PROFILE=profile))
        assert (out.returncode, out.stdout) == (1, ""), profile
        assert out.stderr == (f"mtsum: s3://sso/a: the SSO session {session} has expired: "
                              f"run `aws sso login --profile {profile}`\n")
    out = run(mtsum_bin, "--profile", "denied", "s3://sso/a", env=env)
    assert (out.returncode, out.stderr) == (1, (
        f"mtsum: s3://sso/a: the SSO portal 127.0.0.1 answered 403 Forbidden for the role "
        f"Admin of account {ACCOUNT}\n"))


def test_an_expired_or_expiring_session_token_is_renewed_with_its_refresh_token(
        mtsum_bin, sso, tmp_path):
    endpoint, portal, bodies = sso
    env = sso_home(tmp_path, endpoint, portal)
    home = tmp_path / "home"
    want = [hashlib.md5(bodies["a"]).hexdigest()]
    # Expired an hour ago, and expiring in ten minutes (within the AWS CLI's 15): both are
    # renewed before the portal is asked, and the cache holds the new token for the next
    # run (and the AWS CLI), the session's other fields kept.
    for n, expires in enumerate([in_hours(-1), in_hours(10 / 60)]):
        portal.refreshes[f"refresh-{n}"] = (f"renewed-{n}", f"refresh-{n}-next")
        cache = login(home, "corp", "stale-token", expires, refresh=f"refresh-{n}")
        portal.asked.clear()
        out = run(mtsum_bin, "--profile", "dev", "-a", "md5", "-t", "plain", "s3://sso/a",
                  env=env)
        assert (out.returncode, out.stderr) == (0, ""), expires
        assert digests(out) == want
        assert [(path, token) for path, _, token in portal.asked] == [
            ("/token", None), ("/federation/credentials", f"renewed-{n}")], portal.asked
        assert portal.asked[0][1] == {
            "clientId": "cli-client", "clientSecret": "cli-secret",
            "grantType": "refresh_token", "refreshToken": f"refresh-{n}"}
        cached = json.loads(cache.read_text())
        assert cached["accessToken"] == f"renewed-{n}"
        assert cached["refreshToken"] == f"refresh-{n}-next"
        assert cached["expiresAt"] > in_hours(7.9), cached
        assert cached["startUrl"] == "https://corp.awsapps.com/start" and cached["clientId"]
        assert not [p for p in cache.parent.iterdir() if p.name.endswith(".tmp")]
    # A token good for hours is used as it is.
    portal.asked.clear()
    out = run(mtsum_bin, "--profile", "dev", "-t", "plain", "s3://sso/a", env=env)
    assert out.returncode == 0 and [a[0] for a in portal.asked] == ["/federation/credentials"]


def test_a_refused_renewal_uses_a_token_still_valid_and_else_says_to_log_in(
        mtsum_bin, sso, tmp_path):
    endpoint, portal, _ = sso
    env = sso_home(tmp_path, endpoint, portal)
    home = tmp_path / "home"
    # The service no longer takes the refresh token (the session ended): a token valid for
    # ten more minutes still serves; an expired one is the one line that says to log in.
    cache = login(home, "corp", "corp-token", in_hours(10 / 60), refresh="revoked-refresh")
    out = run(mtsum_bin, "--profile", "dev", "-t", "plain", "s3://sso/a", env=env)
    assert (out.returncode, out.stderr) == (0, "")
    assert json.loads(cache.read_text())["accessToken"] == "corp-token"
    login(home, "corp", "corp-token", in_hours(-1), refresh="revoked-refresh")
    out = run(mtsum_bin, "--profile", "dev", "-t", "plain", "s3://sso/a", env=env)
    assert (out.returncode, out.stderr) == (1, (
        "mtsum: s3://sso/a: the SSO session corp has expired: "
        "run `aws sso login --profile dev`\n"))


def python_env(monkeypatch, env: dict[str, str]) -> None:
    """This process's environment as `env` says for AWS settings and HOME."""
    for name in [n for n in os.environ if n.startswith("AWS_") and n not in env]:
        monkeypatch.delenv(name)
    for name in ["HOME", *[n for n in env if n.startswith("AWS_")]]:
        monkeypatch.setenv(name, env[name])


def test_python_reads_with_an_sso_profile(sso, tmp_path, monkeypatch):
    endpoint, portal, bodies = sso
    python_env(monkeypatch, sso_home(tmp_path, endpoint, portal))
    local = tmp_path / "a"
    local.write_bytes(bodies["a"])
    got = mtsum.file_digest("s3://sso/a", storage_options={"profile": "dev"})
    assert got == mtsum.file_digest(local)
    with pytest.raises(OSError, match="the SSO session stale has expired: run `aws sso login "
                                      "--profile late`"):
        mtsum.file_digest("s3://sso/a", storage_options={"profile": "late"})


def test_python_renews_an_expired_session_token(sso, tmp_path, monkeypatch):
    endpoint, portal, bodies = sso
    env = sso_home(tmp_path, endpoint, portal)
    home = tmp_path / "home"
    # A profile of its own: this process keeps the stores (and credentials) of the
    # profiles the tests before used.
    with open(home / ".aws" / "config", "a") as config:
        config.write(f"[profile renewer]\nsso_session = renewing\nsso_account_id = {ACCOUNT}\n"
                     f"sso_role_name = {ROLE}\nregion = us-east-1\nendpoint_url = {endpoint}\n\n"
                     "[sso-session renewing]\nsso_start_url = https://renewing.awsapps.com/start\n"
                     "sso_region = eu-west-1\n")
    cache = login(home, "renewing", "stale-token", in_hours(-1), refresh="refresh-py")
    portal.refreshes["refresh-py"] = ("renewed-py", "refresh-py-next")
    python_env(monkeypatch, env)
    local = tmp_path / "a"
    local.write_bytes(bodies["a"])
    got = mtsum.file_digest("s3://sso/a", storage_options={"profile": "renewer"})
    assert got == mtsum.file_digest(local)
    assert json.loads(cache.read_text())["accessToken"] == "renewed-py"
