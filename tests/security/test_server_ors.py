"""ORS session ids come from the server (POST /create_session) only; a client cannot choose one."""

from __future__ import annotations

import httpx

BODY = {"env_name": "wordle", "split": "test", "index": 0}


def mint(http: httpx.Client) -> str:
    reply = http.post("/create_session")
    assert reply.status_code == 200, reply.text
    lines = reply.text.splitlines()
    return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("data:"))


def test_client_chosen_session_ids_are_refused(serve) -> None:
    url, manager = serve("wordle")
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        for chosen in ("mine", "00000000-0000-0000-0000-000000000000", "x" * 300):
            reply = http.post("/create", json=BODY, headers={"X-Session-ID": chosen})
            assert reply.status_code == 404, reply.text
            assert reply.json()["code"] == "SESSION_NOT_FOUND" and "/create_session" in reply.json()["detail"]
        assert manager.active == 0
        sid = mint(http)
        assert http.post("/create", json=BODY, headers={"X-Session-ID": sid}).json() == {"sid": sid}
        assert http.post("/create", json=BODY, headers={"X-Session-ID": sid}).status_code >= 400  # once only
        assert http.post("/delete", headers={"X-Session-ID": sid}).json() == {"sid": sid}
        reused = http.post("/create", json=BODY, headers={"X-Session-ID": sid})
        assert reused.status_code in (404, 410) and manager.active == 0, reused.text
