"""A local stand-in for the Hugging Face Hub's repository API, enough for ``huggingface_hub`` to
create a Space and commit a folder to it (the Hub itself is not reachable from here).

It speaks what ``HfApi.create_repo`` and the one-commit ``upload_folder`` send: ``POST
/api/repos/create`` (``GET /api/spaces/{id}`` when it exists), ``POST /api/validate-yaml`` (the
Space card), ``POST /api/spaces/{id}/preupload/{rev}`` (every file uploaded inline) and ``POST
/api/spaces/{id}/commit/{rev}`` (NDJSON: a header line, then one base64 line per file). It
checks the bearer token and keeps what was committed, so a test reads the Space as the Hub would.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@dataclass
class Hub:
    token: str
    spaces: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> {"sdk", "private", "files"}
    unknown: list[str] = field(default_factory=list)  # requests it does not know (a test asserts none)

    def authorised(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.token}"

    async def create(self, request: Request) -> JSONResponse:
        if not self.authorised(request):
            return JSONResponse({"error": "Invalid credentials in Authorization header"}, 401)
        body = await request.json()
        space = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
        if body.get("type") != "space" or body.get("sdk") != "docker":
            return JSONResponse({"error": f"expected a docker space, got {body}"}, 400)
        if space in self.spaces:
            return JSONResponse({"error": "You already created this space repo", "url": f"/spaces/{space}"}, 409)
        self.spaces[space] = {"sdk": body["sdk"], "private": body.get("private"), "files": {}}
        return JSONResponse({"url": f"{request.base_url}spaces/{space}", "name": space})

    async def validate_yaml(self, request: Request) -> JSONResponse:
        """The Space card's front matter, held to what the Hub needs to build a Docker Space."""
        body = await request.json()
        text = body.get("content", "")
        errors = []
        if body.get("repoType") != "space" or not text.startswith("---\n"):
            errors.append("a Space README starts with YAML front matter")
        else:
            meta = yaml.safe_load(text.split("---\n", 2)[1])
            if meta.get("sdk") != "docker" or not isinstance(meta.get("app_port"), int):
                errors.append(f"sdk must be docker with an integer app_port: {meta}")
            if not str(meta.get("title", "")).strip():
                errors.append("title is required")
        return JSONResponse({"errors": [{"message": e} for e in errors], "warnings": []}, 400 if errors else 200)

    async def preupload(self, request: Request) -> JSONResponse:
        body = await request.json()
        files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in body["files"]]
        return JSONResponse({"files": files, "commitOid": "0" * 40})

    async def commit(self, request: Request) -> JSONResponse:
        space = f"{request.path_params['owner']}/{request.path_params['name']}"
        if not self.authorised(request) or space not in self.spaces:
            return JSONResponse({"error": "Repository not found"}, 404)
        for line in (await request.body()).decode().splitlines():
            item = json.loads(line)
            if item["key"] == "file":
                self.spaces[space]["files"][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            elif item["key"] != "header":
                self.unknown.append(f"commit line {item['key']}")
        oid = "1" * 40
        return JSONResponse({"commitUrl": f"{request.base_url}spaces/{space}/commit/{oid}", "commitOid": oid})

    async def space_info(self, request: Request) -> JSONResponse:
        space = f"{request.path_params['owner']}/{request.path_params['name']}"
        if space not in self.spaces:
            return JSONResponse({"error": "Repository not found"}, 404)
        return JSONResponse(
            {"id": space, "sdk": self.spaces[space]["sdk"], "private": bool(self.spaces[space]["private"])}
        )

    async def agent_harnesses(self, request: Request) -> JSONResponse:
        """The registry the client reads to name the agent it runs under in its user agent: none here."""
        return JSONResponse({"standardEnvVars": [], "harnesses": {}})

    async def other(self, request: Request) -> JSONResponse:
        self.unknown.append(f"{request.method} {request.url.path}")
        return JSONResponse({"error": "not served by the local Hub"}, 404)

    def app(self) -> Starlette:
        space = "/api/spaces/{owner}/{name}"
        return Starlette(
            routes=[
                Route("/api/repos/create", self.create, methods=["POST"]),
                Route("/api/validate-yaml", self.validate_yaml, methods=["POST"]),
                Route("/api/agent-harnesses", self.agent_harnesses, methods=["GET"]),
                Route(space, self.space_info, methods=["GET"]),
                Route(space + "/preupload/{revision}", self.preupload, methods=["POST"]),
                Route(space + "/commit/{revision}", self.commit, methods=["POST"]),
                Route("/{path:path}", self.other, methods=["GET", "POST", "PUT", "DELETE", "HEAD"]),
            ]
        )
