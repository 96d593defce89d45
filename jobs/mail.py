"""Outgoing e-mail: SMTP when ``AISLE_SMTP_URL`` is set, otherwise ``.eml`` files in ``data/outbox/``."""

from __future__ import annotations

import smtplib
import uuid
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import unquote, urlparse


class Outbox:
    def __init__(self, *, outbox_dir: Path, smtp_url: str | None, sender: str) -> None:
        self.outbox_dir = outbox_dir
        self.smtp_url = smtp_url
        self.sender = sender

    def send(self, *, to: str, subject: str, body: str) -> str:
        """Send one plain-text message; returns its Message-ID."""
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = to
        message["Subject"] = subject
        message_id = f"<{uuid.uuid4()}@aisle>"
        message["Message-ID"] = message_id
        message.set_content(body)
        if self.smtp_url:
            self._send_smtp(message, self.smtp_url)
        else:
            self._write_file(message, message_id)
        return message_id

    def _write_file(self, message: EmailMessage, message_id: str) -> None:
        self.outbox_dir.mkdir(parents=True, exist_ok=True)
        name = message_id.strip("<>").split("@")[0]
        temp = self.outbox_dir / f".{name}.tmp"
        temp.write_bytes(bytes(message))
        temp.rename(self.outbox_dir / f"{name}.eml")

    def _send_smtp(self, message: EmailMessage, smtp_url: str) -> None:
        url = urlparse(smtp_url)
        smtp_class = smtplib.SMTP_SSL if url.scheme == "smtps" else smtplib.SMTP
        with smtp_class(url.hostname or "localhost", url.port or 25, timeout=10) as smtp:
            if url.scheme == "smtp+starttls":
                smtp.starttls()
            if url.username:
                smtp.login(unquote(url.username), unquote(url.password or ""))
            smtp.send_message(message)
