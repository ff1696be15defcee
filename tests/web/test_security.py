"""No token, no change; reads closed unless opened on purpose; nothing reflected as HTML."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from suanli.errors import InputError
from suanli.web import Auth, create_app
from suanli.web.settings import AuthSettings, ReceiverSettings
from tests.web._server import AUTH, TOKEN, Recorder, make_app

CHANGES = {"POST", "PUT", "PATCH", "DELETE"}


def _changing_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Every route that changes state, from the app's OpenAPI description (routers included)."""
    return sorted((m.upper(), path) for path, ops in app.openapi()["paths"].items() for m in ops
                  if m.upper() in CHANGES)


def test_every_state_change_without_the_token_is_401() -> None:
    app = make_app(Recorder())
    routes = _changing_routes(app)
    assert ("POST", "/v1/traces") in routes and len(routes) == 3
    with TestClient(app) as client:
        for method, path in routes:
            for headers in ({}, {"Authorization": "Bearer " + TOKEN[:-1]}, {"Authorization": "Bearer " + TOKEN + "x"},
                            {"Authorization": "Basic " + TOKEN}, {"Authorization": TOKEN}):
                resp = client.request(method, path, content=b"{}",
                                      headers={**headers, "Content-Type": "application/json"})
                assert resp.status_code == 401, (method, path, headers, resp.status_code)


def test_without_a_configured_token_nothing_changes() -> None:
    rec = Recorder()
    app = create_app(ReceiverSettings(), rec.consumers(), Auth(None))
    with TestClient(app) as client:
        for method, path in _changing_routes(app):
            assert client.request(method, path, content=b"{}", headers={**AUTH, "Content-Type": "application/json"}
                                  ).status_code == 401
        assert client.get("/api/v1/ingest/status", headers=AUTH).status_code == 401


def test_reads_need_the_token_unless_opened() -> None:
    with TestClient(make_app(Recorder())) as closed, TestClient(make_app(Recorder(), open_reads=True)) as opened:
        assert closed.get("/api/v1/ingest/status").status_code == 401
        ok = closed.get("/api/v1/ingest/status", headers=AUTH)
        assert ok.status_code == 200 and ok.json()["receivers"]["spans"]["open"] is True
        assert opened.get("/api/v1/ingest/status").status_code == 200
        assert opened.post("/api/v1/ingest/alertmanager", json={"alerts": []}).status_code == 401


def test_token_from_file_or_environment(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text(f"  {TOKEN}\n")
    from_file = Auth.from_settings(AuthSettings(token_file=str(file), token_env="X"), {"X": "other-token-0123456789"})
    assert from_file.allows(f"Bearer {TOKEN}") and not from_file.allows("Bearer other-token-0123456789")
    from_env = Auth.from_settings(AuthSettings(token_env="SUANLI_TOKEN"), {"SUANLI_TOKEN": TOKEN})
    assert from_env.allows(f"bearer {TOKEN}")
    assert not Auth.from_settings(AuthSettings(), {}).configured
    with pytest.raises(InputError, match=r"missing: auth.token_file: cannot read the token file"):
        Auth.from_settings(AuthSettings(token_file=str(tmp_path / "missing")), {})
    with pytest.raises(InputError, match="at least 16 characters"):
        Auth.from_settings(AuthSettings(), {"SUANLI_TOKEN": "short"})


def test_nothing_a_request_carries_comes_back_as_html() -> None:
    evil = "<script>alert(1)</script>"
    with TestClient(make_app(Recorder())) as client:
        answers = [
            client.post("/v1/traces", content=evil, headers={**AUTH, "Content-Type": "application/json"}),
            client.post("/v1/traces", content=b"", headers={**AUTH, "Content-Type": evil}),
            client.post("/v1/traces", content=b"", headers={**AUTH, "Content-Type": "application/json",
                                                            "Content-Encoding": evil}),
            client.post("/api/v1/ingest/alertmanager", content=evil, headers=AUTH),
            client.post(f"/api/v1/ingest/kineto?job={evil}", content=b"{}", headers=AUTH),
            client.get(f"/{evil}"),
        ]
    for resp in answers:
        assert resp.status_code in (400, 404, 415)
        assert not resp.headers["content-type"].startswith("text/html")
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert "<script" not in resp.text                     # request text is never echoed
