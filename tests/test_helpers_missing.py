"""What a test does when something it needs is not installed (tests/helpers/paths.missing)."""

from __future__ import annotations

import pytest

from tests.helpers.paths import missing


def test_a_missing_npm_server_or_browser_skips_here_and_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="npm ci"):
        missing("server-everything is not installed (cd tests/npm && npm ci)", "scripts/test installs it")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI must have it"):
        missing("server-everything is not installed (cd tests/npm && npm ci)", "scripts/test installs it")
