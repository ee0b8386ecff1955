"""A replay server: recorded real provider exchanges served byte for byte over HTTP.

A recording (``tests/data/provider_recordings/*.json``, copied from the shared recordings; see its README) holds the response to a first
request and the recorded follow-ups (the next requests' responses, e.g. after a tool call or on each
retry). ``ReplayServer`` answers any POST to ``…/chat/completions`` or ``…/messages`` with the next one
of them, status, content type and body exactly as recorded; requests past the recording get a short
final text reply in the recording's own API (OpenAI chat chunks or Anthropic Messages events), so a
tool-using turn can end. Every request body is kept for the test to read::

    with ReplayServer(Recording.load(path)) as server:
        settings = Settings(base_url=server.base_url, api_key="test", model=recording.model)
        ...
        server.requests[1]["messages"]   # the request after the tool call
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# The recordings ship with the repository's tests (not in the wheel); CATBUDDY_RECORDINGS points elsewhere.
RECORDINGS_DIR = Path(
    os.environ.get("CATBUDDY_RECORDINGS")
    or Path(__file__).resolve().parents[2] / "tests" / "data" / "provider_recordings"
)
PASSED_HEADERS = ("content-type", "retry-after", "retry-after-ms", "request-id", "x-request-id")
FINAL_TEXT = "Replay finished."


@dataclass(frozen=True)
class RecordedResponse:
    status: int
    headers: dict[str, str]
    body: str


@dataclass(frozen=True)
class Recording:
    id: str
    api: str  # "openai" (chat completions) or "anthropic" (Messages)
    provider: str
    model: str
    kind: str  # text, tool, reasoning, reasoning+tool, error
    url: str
    request: dict[str, Any] | None
    responses: list[RecordedResponse]
    followup_requests: list[dict[str, Any] | None] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Recording:
        data = json.loads(path.read_text(encoding="utf-8"))
        steps = [data["response"]] + [f["response"] for f in data.get("followups") or []]
        requests = [f.get("request") for f in data.get("followups") or []]
        return cls(
            id=data["id"],
            api=data.get("api", "openai"),
            provider=data.get("provider", ""),
            model=data.get("model", ""),
            kind=data.get("kind", ""),
            url=data.get("url") or "",
            request=data.get("request") if isinstance(data.get("request"), dict) else None,
            responses=[
                RecordedResponse(
                    int(step["status"]),
                    {k.lower(): str(v) for k, v in (step.get("headers") or {}).items()},
                    step.get("body") or "",
                )
                for step in steps
            ],
            followup_requests=[r if isinstance(r, dict) else None for r in requests],
            source=data.get("source") or {},
        )

    @property
    def base_host(self) -> str:
        """The host the exchange was recorded against ("" when unknown)."""
        from urllib.parse import urlparse

        return urlparse(self.url).hostname or ""


def all_recordings(directory: Path = RECORDINGS_DIR) -> list[Recording]:
    return [Recording.load(p) for p in sorted(directory.glob("*.json"))]


def _final_reply(api: str, model: str) -> RecordedResponse:
    """A short text answer in the recording's API, for requests past the recording."""
    if api == "anthropic":
        events = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_replay",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 1},
                    },
                },
            ),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": FINAL_TEXT},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 3},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    else:
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": FINAL_TEXT}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}},
        ]
        body = (
            "".join(
                f"data: {json.dumps({'id': 'replay', 'object': 'chat.completion.chunk', 'model': model, **c})}\n\n"
                for c in chunks
            )
            + "data: [DONE]\n\n"
        )
    return RecordedResponse(200, {"content-type": "text/event-stream"}, body)


class ReplayServer:
    """Serves one recording's responses in order (then short final replies); thread-safe."""

    def __init__(self, recording: Recording, host: str = "127.0.0.1") -> None:
        self.recording = recording
        self.host = host
        self.port = 0
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        # Anthropic's SDK appends /v1/messages itself; OpenAI-compatible clients want the /v1.
        root = f"http://{self.host}:{self.port}"
        return root if self.recording.api == "anthropic" else root + "/v1"

    def next_response(self, path: str, body: dict[str, Any]) -> RecordedResponse:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            self.paths.append(path)
        if index < len(self.recording.responses):
            return self.recording.responses[index]
        return _final_reply(self.recording.api, self.recording.model)

    def start(self) -> ReplayServer:
        server = self
        handler = type("ReplayHandler", (_Handler,), {"server_ref": server})
        self._server = ThreadingHTTPServer((self.host, 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Handler(BaseHTTPRequestHandler):
    server_ref: ReplayServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        response = self.server_ref.next_response(self.path, body if isinstance(body, dict) else {})
        payload = response.body.encode("utf-8")
        with contextlib.suppress(OSError):
            self.send_response(response.status)
            for name in PASSED_HEADERS:
                if name in response.headers:
                    self.send_header(name, response.headers[name])
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

    def do_GET(self) -> None:
        payload = json.dumps({"object": "list", "data": [{"id": self.server_ref.recording.model}]}).encode()
        with contextlib.suppress(OSError):
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
