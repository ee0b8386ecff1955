"""A tiny MCP server over stdio, written against the wire protocol (newline-delimited JSON-RPC).

It starts in milliseconds (no SDK import), which keeps the lifecycle tests fast: killed, crashing,
slow and failing servers. Each call runs in its own thread so a slow call does not block the next.
``--exit-after-start`` makes it die right after the handshake, to test a server that dies early;
``--start-delay SECONDS`` makes it slow to answer ``initialize``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {
        "name": "sleep",
        "description": "Sleep, then answer.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "crash",
        "description": "Exit in the middle of the call.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {"name": "pid", "description": "The server's pid.", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "grow",
        "description": "Add a tool named `extra`.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]
EXTRA = {
    "name": "extra",
    "description": "Added by grow.",
    "inputSchema": {"type": "object", "properties": {}},
}

_write_lock = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with _write_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def text_result(text: str, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def call(request_id: Any, name: str, args: dict[str, Any]) -> None:
    if name == "echo":
        result = text_result(str(args.get("text", "")))
    elif name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        result = text_result("slept")
    elif name == "fail":
        result = text_result("tiny server: this tool always fails", is_error=True)
    elif name == "crash":
        print("tiny server: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)
    elif name == "pid":
        result = text_result(str(os.getpid()))
    elif name == "grow":
        TOOLS.append(EXTRA)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        result = text_result("grown")
    else:
        send(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"unknown tool {name}"}}
        )
        return
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


START_DELAY = float(sys.argv[sys.argv.index("--start-delay") + 1]) if "--start-delay" in sys.argv else 0.0


def main() -> None:
    print(f"tiny server: started as pid {os.getpid()}", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            time.sleep(START_DELAY)
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": params.get("protocolVersion"),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "tiny", "version": "1"},
                    },
                }
            )
        elif method == "notifications/initialized" and "--exit-after-start" in sys.argv:
            print("tiny server: exiting after start", file=sys.stderr, flush=True)
            sys.exit(0)
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            args = (params.get("name"), params.get("arguments") or {})
            threading.Thread(target=call, args=(request_id, *args), daemon=True).start()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif request_id is not None:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
            )


if __name__ == "__main__":
    main()
