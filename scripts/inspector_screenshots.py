"""Screenshots of the memory inspector's main views, from the demo's memory, for the README.

Runs the shipped demo (offline model) into a throwaway SQLite file, serves the inspector
with ``langmem-tiers inspect`` and has headless Chromium photograph each view into
``docs/images/`` (PNGs reduced to a palette, so they stay small).

    $ python scripts/inspector_screenshots.py        # needs chromium and Pillow
"""

from __future__ import annotations

import html
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images"
SCOPE = "demo-user"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _shot(chromium: str, url: str, path: Path, profile: str, height: int) -> None:
    subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size=1200,{height}",
            f"--screenshot={path}",
            url,
        ],
        check=True,
        capture_output=True,
    )
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=64)
        small.save(path, optimize=True)


def main() -> int:
    chromium = shutil.which("chromium")
    if chromium is None:
        print("needs chromium: apt-get install -y chromium", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="lmt-shots-"))
    url = f"sqlite:///{work / 'demo.db'}"
    run = [sys.executable, "-m", "langmem_tiers"]
    subprocess.run([*run, "demo", "--url", url, "--scope", SCOPE, "--quiet"], check=True)
    port = _port()
    server = subprocess.Popen(
        [*run, "inspect", "--url", url, "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        link = re.search(r"http://\S+", server.stdout.readline())
        assert link, "inspect printed no link"
        token = link.group(0).split("key=")[1]
        base = f"http://127.0.0.1:{port}/ui"
        for _ in range(100):
            try:
                httpx.get(f"{base}/login")
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        with httpx.Client(headers={"X-API-Key": token}) as client:
            page = client.get(f"{base}/scope", params={"scope": SCOPE}).text
            old = re.search(
                r"memory\?scope=[^&]+&amp;id=([^\"]+)\">fact:[^<]*s1-kickoff:m15<", page
            )
            timeline = client.get(f"{base}/timeline", params={"scope": SCOPE}).text
            found = re.search(r'data-times="([^"]*)"', timeline)
            times = json.loads(html.unescape(found.group(1))) if found else []
            middle = times[len(times) // 2] if times else ""
        OUT.mkdir(parents=True, exist_ok=True)
        views = {
            "inspector-search.png": (
                "scope",
                {"scope": SCOPE, "q": "When is the launch date?", "min_score": "0.5"},
                1100,
            ),
            "inspector-memory.png": (
                "memory",
                {"scope": SCOPE, "id": old.group(1) if old else ""},
                1000,
            ),
            "inspector-session.png": (
                "session",
                {"scope": SCOPE, "id": f"{SCOPE}-s4-problems", "policy": "eager"},
                900,
            ),
            "inspector-timeline.png": ("timeline", {"scope": SCOPE, "at": middle}, 800),
        }
        for name, (view, params, height) in views.items():
            params = dict(params, key=token)
            _shot(
                chromium, f"{base}/{view}?{urlencode(params)}", OUT / name, str(work / "p"), height
            )
            print(f"{OUT / name}: {(OUT / name).stat().st_size:,} bytes")
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
