"""Scoped tokens: a tenant's token reads and decides on its own threads only (issue 35 item 8).

A thread's decisions quote its conversation, so one token for every thread lets any tenant
read any other's. The deployment lists tokens in `GUARDAGENT_SERVICE_TOKENS_FILE`, each with a
thread-id prefix and scopes (``decide``, ``read``). These tests run the app in one process
(threads in memory: the scope is checked before any store is read, so the store does not
matter) and check that a token of tenant A cannot read, decide on, or learn the existence of
tenant B's threads, nor meet B's idempotency keys.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from guardagent.service import access
from guardagent.service.access import Access, read_grants
from guardagent.service.app import create_app
from guardagent.service.settings import ServiceSettings

TASK = "Task: Book a double room at a hotel in Lisbon for two nights\nUser information:\n"
FACTS = "   domestic: True,\n   dr_license: False,\n   vaccine: True,\n   membership: True"
ADULT = TASK + "   age: 40,\n" + FACTS
MINOR = TASK + "   age: 16,\n" + FACTS
OUTPUT = (
    "(Analysis)\nThe hotel booking page is open.\n\n(Choices)\nA. <button id=0> Reserve "
    "</button>\n\n(Final Answer)\nELEMENT: A\n\nACTION: CLICK\n\nVALUE: None"
)
ADMIN = "admin-token-0123456789"
TOKENS = {  # name: (token, threads, scopes)
    "a-decide": ("token-a-decide-xyz", "tenant-a/", ["decide"]),
    "a-read": ("token-a-read-xyz", "tenant-a/", ["read"]),
    "a-both": ("token-a-both-xyz", "tenant-a/", ["decide", "read"]),
    "b-both": ("token-b-both-xyz", "tenant-b/", ["read", "decide"]),
    "all-read": ("token-all-read-xyz", "", ["read"]),
}


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _tokens_file(path: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "tokens": [
                    {"name": name, "sha256": _sha(token), "threads": threads, "scopes": scopes}
                    for name, (token, threads, scopes) in TOKENS.items()
                ]
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = _tokens_file(tmp_path_factory.mktemp("access") / "tokens.json")
    env = {
        "GUARDAGENT_PROFILE": "mind2web-sc",
        "GUARDAGENT_SERVICE_TOKEN": ADMIN,
        "GUARDAGENT_SERVICE_TOKENS_FILE": str(path),
    }
    settings_ = ServiceSettings.from_env(env)
    assert settings_.guard.profile == "mind2web-sc"
    with TestClient(create_app(settings_)) as client:
        yield client


def _as(name: str) -> dict[str, str]:
    token = ADMIN if name == "admin" else TOKENS[name][0]
    return {"Authorization": f"Bearer {token}"}


def _decide(client: Any, who: str, **body: Any) -> Any:
    return client.post(
        "/v1/decide/event", json={"input": ADULT, "output": OUTPUT, **body}, headers=_as(who)
    )


def _read(client: Any, who: str, thread: str) -> Any:
    return client.get(f"/v1/threads/{quote(thread, safe='/')}", headers=_as(who))


def test_a_tenant_reads_and_decides_on_its_own_threads(service: Any) -> None:
    made = _decide(service, "a-decide", thread_id="tenant-a/chat-1")
    assert made.status_code == 200 and made.json()["allowed"] is True
    for who in ("a-read", "a-both", "all-read", "admin"):
        history = _read(service, who, "tenant-a/chat-1")
        assert history.status_code == 200, who
        assert len(history.json()["decisions"]) == 1, who


@pytest.mark.parametrize(
    "who, route",
    [
        ("a-read", "decide"),
        ("all-read", "decide"),
        ("a-decide", "read"),
    ],
)
def test_a_token_without_the_scope_is_refused(service: Any, who: str, route: str) -> None:
    thread = "tenant-a/scoped"
    answer = (
        _decide(service, who, thread_id=thread)
        if route == "decide"
        else _read(service, who, thread)
    )
    assert answer.status_code == 403, answer.text
    if route == "decide":  # a stateless decision needs the scope too
        assert _decide(service, who).status_code == 403


def test_another_tenants_thread_cannot_be_read_decided_on_or_found(service: Any) -> None:
    assert _decide(service, "b-both", thread_id="tenant-b/secret", input=MINOR).status_code == 200
    before = _read(service, "admin", "tenant-b/secret").json()
    assert before["decisions"], "tenant B's thread exists"
    for who in ("a-both", "a-read", "a-decide"):
        for route in ("read", "decide"):
            existing = (
                _read(service, who, "tenant-b/secret")
                if route == "read"
                else _decide(service, who, thread_id="tenant-b/secret")
            )
            absent = (
                _read(service, who, "tenant-b/no-such")
                if route == "read"
                else _decide(service, who, thread_id="tenant-b/no-such")
            )
            assert existing.status_code == absent.status_code == 403, (who, route)
            assert existing.content == absent.content, "the answer tells nothing of existence"
            assert "tenant-b" not in existing.text and "MINOR" not in existing.text
    assert _read(service, "admin", "tenant-b/secret").json() == before, "nothing written"
    assert _read(service, "admin", "tenant-b/no-such").json()["checkpoints"] == 0


def test_a_prefix_is_not_a_tenant_of_a_longer_name(service: Any) -> None:
    for thread in (
        "tenant-a",
        "tenant-ab/x",
        "tenant-a\\x",
        "Tenant-a/x",
        "/tenant-a/x",
        " tenant-a/x",
        "tenant-a/../tenant-b/secret",
    ):
        assert _read(service, "a-read", thread).status_code == 403, thread


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(["tenant-a/", "tenant-b/", "tenant-", "", "x/tenant-a/"]),
    st.text(st.sampled_from("ab/-_:9"), min_size=1, max_size=12),  # no dot segments:
    st.sampled_from(["a-read", "a-both", "b-both", "all-read"]),
)
def test_reads_are_allowed_exactly_under_the_tokens_prefix(
    service: Any, prefix: str, rest: str, who: str
) -> None:
    """(Dot segments are the HTTP client's to resolve: see the next test.)"""
    thread = prefix + rest
    answer = _read(service, who, thread)
    allowed = thread.startswith(TOKENS[who][1])
    assert answer.status_code == (200 if allowed else 403), (thread, who, answer.text)


def test_idempotency_keys_of_two_tenants_never_meet(service: Any) -> None:
    b = _decide(
        service, "b-both", thread_id="tenant-b/k", idempotency_key="shared-key", input=MINOR
    )
    assert b.status_code == 200 and b.json()["allowed"] is False
    # the same key, another body, from tenant A: a new key there, not B's 409
    a = _decide(service, "a-both", thread_id="tenant-a/k", idempotency_key="shared-key")
    assert a.status_code == 200 and a.json()["allowed"] is True
    assert a.headers.get("Idempotent-Replayed") is None
    # and each tenant's retry replays its own decision
    again = _decide(service, "a-both", thread_id="tenant-a/k", idempotency_key="shared-key")
    assert again.headers.get("Idempotent-Replayed") == "true" and again.json() == a.json()
    other = _decide(
        service, "a-both", thread_id="tenant-a/k", idempotency_key="shared-key", input=MINOR
    )
    assert other.status_code == 409, "a tenant's own key reused for another request"


def test_an_unknown_or_malformed_token_is_401(service: Any) -> None:
    for header in (
        "Bearer nope",
        "Bearer ",
        "",
        "Basic " + TOKENS["a-both"][0],
        TOKENS["a-both"][0],
        "Bearer " + _sha(TOKENS["a-both"][0]),
    ):
        headers = {"Authorization": header} if header else {}
        assert service.get("/v1/threads/tenant-a/chat-1", headers=headers).status_code == 401
        assert (
            service.post(
                "/v1/decide/event", json={"input": "a", "output": "b"}, headers=headers
            ).status_code
            == 401
        )


def test_every_grant_is_compared_whichever_matches(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    grants = read_grants(str(_tokens_file(tmp_path / "t.json")))
    calls: list[int] = []
    real = access.hmac.compare_digest
    monkeypatch.setattr(access.hmac, "compare_digest", lambda a, b: calls.append(1) or real(a, b))
    gate = Access(ADMIN, grants)
    for token in [ADMIN, "nope", *(t for t, _, _ in TOKENS.values())]:
        calls.clear()
        gate.grant(f"Bearer {token}")
        assert len(calls) == len(grants) + 1, token


@pytest.mark.parametrize(
    "content, says",
    [
        ("not json", "cannot read"),
        ('{"tokens": []}', "at least one"),
        ('{"tokens": [{"name": "x", "sha256": "ab", "scopes": ["read"]}]}', "64 hex"),
        (
            '{"tokens": [{"name": "x", "sha256": "' + "0" * 64 + '", "scopes": ["admin"]}]}',
            "scopes",
        ),
        ('{"tokens": [{"name": "x", "sha256": "' + "0" * 64 + '", "scopes": []}]}', "scopes"),
        (
            '{"tokens": [{"name": "x", "sha256": "' + "0" * 64 + '", "scopes": ["read"], '
            '"threads": "acme"}]}',
            "separator",
        ),
        (
            '{"tokens": [{"name": "x", "sha256": "' + "0" * 64 + '", "scopes": ["read"], '
            '"tenant": "acme"}]}',
            "an object of",
        ),
        (
            '{"tokens": [{"name": "x", "sha256": "' + "0" * 64 + '", "scopes": ["read"]}, '
            '{"name": "y", "sha256": "' + "0" * 64 + '", "scopes": ["decide"]}]}',
            "twice",
        ),
    ],
)
def test_a_bad_tokens_file_stops_the_start_naming_the_variable(
    tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=says) as raised:
        ServiceSettings.from_env({"GUARDAGENT_SERVICE_TOKENS_FILE": str(path)})
    assert "GUARDAGENT_SERVICE_TOKENS_FILE" in str(raised.value)
    with pytest.raises(ValueError, match="cannot read"):
        ServiceSettings.from_env({"GUARDAGENT_SERVICE_TOKENS_FILE": str(tmp_path / "missing")})
