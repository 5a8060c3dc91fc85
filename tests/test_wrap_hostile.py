"""`mcptape wrap` on entries it must not break or leak: a remote entry `record --url` would
refuse, and secrets in the command lines and URLs its summary prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE

pytestmark = pytest.mark.slow

CONFIG = (
    '{"mcpServers": {'
    '"remote": {"url": "https://me:pw-remote@example.com/mcp?token=tok-remote",'
    ' "headers": {"Authorization": "Bearer tok-header"}},'
    ' "local": {"command": "srv", "args": ["--api-key", "tok-local"]},'
    ' "ftp": {"url": "ftp://me:pw-ftp@example.com/"}}}'
)
SECRETS = ("pw-remote", "tok-remote", "tok-header", "tok-local", "pw-ftp")


def _mcptape(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, timeout=60)


def test_wrap_remote_skips_a_url_record_would_refuse_and_its_summary_shows_no_secret(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(CONFIG)
    wrapped = _mcptape("wrap", "--remote", str(config), "--db", str(tmp_path / "t.db"))
    assert wrapped.returncode == 0, wrapped.stderr
    summary = wrapped.stdout + wrapped.stderr
    assert "skipped          ftp" in summary and "is not an http:// or https:// URL" in summary
    assert "wrapped          remote" in summary and "wrapped          local" in summary
    assert not [secret for secret in SECRETS if secret in summary], summary
    text = config.read_text()
    assert '"ftp": {"url": "ftp://me:pw-ftp@example.com/"}' in text  # left as it was
    unwrapped = _mcptape("unwrap", str(config))
    assert unwrapped.returncode == 0, unwrapped.stderr
    assert not [secret for secret in SECRETS if secret in unwrapped.stdout + unwrapped.stderr]
    assert config.read_text() == CONFIG
