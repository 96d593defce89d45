"""The outbox: .eml files by default, real SMTP when AISLE_SMTP_URL is set (a loopback SMTP server)."""

from __future__ import annotations

import email
import email.policy

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Sink

from aisle.settings import Settings
from api.app import create_app
from jobs.mail import Outbox
from tests.servers import LiveServer, free_port


class Recorder(Sink):
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@pytest.fixture
def smtp():
    recorder = Recorder()
    controller = Controller(recorder, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield recorder, f"smtp://127.0.0.1:{controller.port}"
    controller.stop()


def test_without_smtp_messages_are_eml_files(tmp_path):
    outbox = Outbox(outbox_dir=tmp_path / "outbox", smtp_url=None, sender="Aisle <no-reply@aisle.example>")
    outbox.send(to="ada@example.com", subject="Hello", body="Body text")
    [path] = list((tmp_path / "outbox").glob("*.eml"))
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    assert (message["To"], message["Subject"], message.get_content().strip()) == (
        "ada@example.com",
        "Hello",
        "Body text",
    )


def test_with_smtp_messages_go_to_the_server(tmp_path, smtp):
    recorder, url = smtp
    outbox = Outbox(outbox_dir=tmp_path / "outbox", smtp_url=url, sender="Aisle <no-reply@aisle.example>")
    outbox.send(to="ada@example.com", subject="Hello", body="Body text")
    [(sender, recipients, content)] = recorder.messages
    assert (sender, recipients) == ("no-reply@aisle.example", ["ada@example.com"])
    assert b"Subject: Hello" in content
    assert not (tmp_path / "outbox").exists() or not list((tmp_path / "outbox").glob("*.eml"))


@pytest.mark.slow
def test_registration_sends_the_verification_email_over_smtp(tmp_path, smtp):
    import httpx

    recorder, url = smtp
    app = create_app(Settings(data_dir=tmp_path / "data", jwt_secret="k" * 40, smtp_url=url))
    with LiveServer(app) as server:
        response = httpx.post(f"{server.url}/api/v1/auth/register",
                              json={"email": "ada@example.com", "password": "correct horse", "name": "Ada"})  # fmt: skip
    assert response.status_code == 201
    [(_, recipients, content)] = recorder.messages
    assert recipients == ["ada@example.com"]
    assert b"verification-token:" in content
