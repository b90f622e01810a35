"""Slow and greedy clients of both HTTP servers (``serve`` and ``mcp --http``), over loopback.

Each server runs as a real process with its limits lowered through the environment
(a header deadline of 1 s, a keep-alive of 1 s, 8 connections), and is sent partial
requests on raw sockets: the connections it may hold, how long it holds them, and that it
still answers while they are open.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from pathlib import Path

import pytest

from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError
from tests.server.processes import free_port, server_process

ROOT = Path(__file__).resolve().parents[2]
LIMITS = {
    "LANGMEM_TIERS_SERVER_HEADER_TIMEOUT": "1",
    "LANGMEM_TIERS_SERVER_KEEPALIVE_TIMEOUT": "1",
    "LANGMEM_TIERS_SERVER_MAX_CONNECTIONS": "8",
}
CAP = 8


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.settimeout(10)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (bounded by the timeout)."""
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _response(sock: socket.socket) -> bytes:
    """One whole response (its headers and its content-length of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, data
        body += chunk
    return head + b"\r\n\r\n" + body


def _get(port: int, path: str, headers: str = "") -> bytes:
    with _connect(port) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n".encode()
        )
        return _read_all(sock)


@pytest.fixture(scope="module", params=["serve", "mcp"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, str, bytes]]:
    """``(port, a path, the status line it answers there)`` of a running server with the
    lowered limits (the MCP server asks for a key: 401)."""
    tmp_path = tmp_path_factory.mktemp(str(request.param))
    port = free_port()
    url = f"sqlite:///{tmp_path / 'slow.db'}"
    if request.param == "serve":
        args = ["--url", url, "serve", "--port", str(port), "--log-level", "warning"]
        path, answer = "/api/v1/health", b"HTTP/1.1 200"
    else:
        args = ["mcp", "--http", "--port", str(port), "--url", url, "--log-level", "warning"]
        path, answer = "/mcp", b"HTTP/1.1 401"
    keep = {k: v for k, v in os.environ.items() if not k.startswith("LANGMEM_TIERS_")}
    env = {**keep, **LIMITS, "PYTHONPATH": str(ROOT)}

    def answering() -> bool:
        return _get(port, path).startswith(answer)

    with server_process(args, env=env, log=tmp_path / "server.log", ready=answering):
        yield port, path, answer


def test_slow_clients_are_bounded_in_time_and_number(server: tuple[int, str, bytes]) -> None:
    port, path, answer = server
    with ExitStack() as stack:
        # Requests that sent their line and one header, then nothing more.
        slow = [stack.enter_context(_connect(port)) for _ in range(CAP - 1)]
        for sock in slow:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode())
        time.sleep(0.2)
        # The server still answers while they wait.
        assert _get(port, path).startswith(answer)
        # Beyond the cap a connection is refused at once.
        held = stack.enter_context(_connect(port))
        time.sleep(0.2)
        extra = [stack.enter_context(_connect(port)) for _ in range(3)]
        for sock in extra:
            sock.settimeout(5)
            assert _read_all(sock).startswith(b"HTTP/1.1 503")
        # The header deadline closes the slow ones, with a 408.
        started = time.monotonic()
        for sock in [*slow, held]:
            assert _read_all(sock).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 5
    assert _get(port, path).startswith(answer)


def test_an_idle_keep_alive_connection_is_closed(server: tuple[int, str, bytes]) -> None:
    port, path, answer = server
    with _connect(port) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert _response(sock).startswith(answer)
        # A second request on the same connection is answered, then the idle one closed.
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        time.sleep(0.1)
        started = time.monotonic()
        rest = _read_all(sock)
        assert rest.startswith(answer)
        assert rest.count(b"HTTP/1.1 ") == 1
        assert time.monotonic() - started < 5
    # A request whose headers trickle in slower than the deadline is cut off.
    with _connect(port) as sock:
        sock.sendall(b"GET ")
        for piece in (path.encode(), b" HTTP/1.1\r\n", b"Host: x\r\n"):
            time.sleep(0.4)
            sock.sendall(piece)
        time.sleep(0.4)
        with suppress(OSError):
            sock.sendall(b"X-Late: yes\r\n")
        assert _read_all(sock).startswith(b"HTTP/1.1 408")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("server_header_timeout", 0),
        ("server_keepalive_timeout", -1),
        ("server_max_connections", 0),
        ("mcp_answer_chars", 0),
    ],
)
def test_server_limits_are_checked(name: str, value: int) -> None:
    with pytest.raises(ConfigurationError, match=name):
        Settings(**{name: value})
    assert getattr(Settings.from_env(environ={f"LANGMEM_TIERS_{name.upper()}": "7"}), name) == 7
