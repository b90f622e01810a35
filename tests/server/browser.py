"""A real browser for tests: headless Chromium driven over chromedriver's W3C WebDriver API.

Needs Debian's ``chromium`` and ``chromium-driver``. Without them the tests skip (with
``CI=true`` they fail: CI must prove the pages in a browser).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.conftest import IN_CI
from tests.server.processes import free_port

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,1000",
]


def browser_or_skip() -> tuple[str, str]:
    """The paths of chromium and chromedriver; fails under CI, else skips, when missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        message = (
            "the browser tests need Chromium and its driver: "
            "apt-get install -y chromium chromium-driver"
        )
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return chromium, driver


class Browser:
    """One WebDriver session: open pages, find elements, type, click, run a script."""

    def __init__(self, endpoint: str, session: str) -> None:
        self.http = httpx.Client(base_url=f"{endpoint}/session/{session}", timeout=60)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, path, json=body)
        data = response.json()
        if response.status_code != 200:
            raise AssertionError(f"WebDriver {method} {path}: {data}")
        return data["value"]

    def open(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    @property
    def title(self) -> str:
        return str(self._call("GET", "/title"))

    @property
    def url(self) -> str:
        return str(self._call("GET", "/url"))

    def find(self, css: str) -> str:
        found = self._call("POST", "/element", {"using": "css selector", "value": css})
        return str(found[ELEMENT])

    def find_all(self, css: str) -> list[str]:
        found = self._call("POST", "/elements", {"using": "css selector", "value": css})
        return [str(f[ELEMENT]) for f in found]

    def wait_for(self, css: str, timeout: float = 20.0) -> str:
        """The first element matching ``css`` once there (after a navigation a click began)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.find_all(css)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no element {css!r} at {self.url}")
            time.sleep(0.05)

    def text(self, element: str) -> str:
        return str(self._call("GET", f"/element/{element}/text"))

    def type(self, element: str, text: str) -> None:
        self._call("POST", f"/element/{element}/value", {"text": text})

    def clear(self, element: str) -> None:
        self._call("POST", f"/element/{element}/clear", {})

    def click(self, element: str) -> None:
        self._call("POST", f"/element/{element}/click", {})

    def script(self, source: str, *args: Any) -> Any:
        return self._call("POST", "/execute/sync", {"script": source, "args": list(args)})

    def screenshot(self) -> bytes:
        import base64

        return base64.b64decode(self._call("GET", "/screenshot"))


@contextmanager
def chromium_browser() -> Iterator[Browser]:
    """A headless Chromium session for the duration of the block."""
    chromium, driver = browser_or_skip()
    port = free_port()
    process = subprocess.Popen(
        [driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    endpoint = f"http://127.0.0.1:{port}"
    profile = tempfile.mkdtemp(prefix="lmt-chromium-")
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{endpoint}/status", timeout=2).json()["value"]["ready"]:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("chromedriver did not start")
            time.sleep(0.1)
        capabilities = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": [*CHROMIUM_ARGS, f"--user-data-dir={profile}"],
                    },
                }
            }
        }
        created = httpx.post(f"{endpoint}/session", json=capabilities, timeout=60).json()
        session = created["value"]["sessionId"]
        browser = Browser(endpoint, session)
        try:
            yield browser
        finally:
            httpx.delete(f"{endpoint}/session/{session}", timeout=30)
            browser.http.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
