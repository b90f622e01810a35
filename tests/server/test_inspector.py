"""The memory inspector in a real browser, on SQLite and PostgreSQL.

One server (uvicorn in a thread, over the demo's memory made with the offline model) and
one headless Chromium per backend; the tests read what the browser shows and compare it
with the package's own answers (``RankedItem.scores``, ``replay``, the short-term memory).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote, urlencode

import httpx
import pytest
import uvicorn

from langmem_tiers import MemoryEngine, RankedItem, TieredMemoryStore
from langmem_tiers.cli.main import main
from langmem_tiers.server import ApiKeys, create_app
from langmem_tiers.sql.item_ids import item_id
from tests.conftest import POSTGRES_URL, _postgres_or_skip, _schema_factory
from tests.server.browser import Browser, browser_or_skip, chromium_browser
from tests.server.processes import free_port

SCOPE = "demo-user"
OTHER = "agent-b"
PAYLOAD = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> & done'


@dataclass
class Inspector:
    base: str
    store: TieredMemoryStore
    engine: MemoryEngine
    browser: Browser
    admin: str
    key: str
    other_key: str
    payload_id: str

    def url(self, path: str, **params: str) -> str:
        return f"{self.base}/ui{path}" + (f"?{urlencode(params)}" if params else "")

    def sign_in(self, key: str) -> None:
        self.browser.open(self.url("/", key=key))


def _build_memory(url: str) -> None:
    """The demo's memory, made with the offline model."""
    # Into the fourth session, where the launch date moves (a superseded fact).
    assert main(["demo", "--turns", "150", "--url", url, "--scope", SCOPE, "--quiet"]) == 0


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def inspector(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Inspector]:
    browser_or_skip()
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('inspector') / 'memory.db'}"
        else:
            _postgres_or_skip()
            url = stack.enter_context(_schema_factory(POSTGRES_URL))()
        _build_memory(url)
        with TieredMemoryStore.from_url(url) as store:
            engine = MemoryEngine(store)
            payload = engine.add_semantic(SCOPE, PAYLOAD, category="note").memory
            engine.add_semantic(OTHER, "Agent B keeps its own notes.")
            keys = ApiKeys(store.db)
            admin = keys.create(admin=True).key
            key = keys.create(scope=SCOPE).key
            other_key = keys.create(scope=OTHER).key
            port = free_port()
            server = uvicorn.Server(
                uvicorn.Config(create_app(store), host="127.0.0.1", port=port, log_level="warning")
            )
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            deadline = time.monotonic() + 30
            while not server.started:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
            try:
                with chromium_browser() as browser:
                    yield Inspector(
                        f"http://127.0.0.1:{port}",
                        store,
                        engine,
                        browser,
                        admin,
                        key,
                        other_key,
                        payload.id,
                    )
            finally:
                server.should_exit = True
                thread.join(timeout=30)


@pytest.fixture(autouse=True)
def _as_admin(request: pytest.FixtureRequest) -> None:
    """Each browser test starts signed in with the admin key."""
    if "inspector" in request.fixturenames:
        found: Inspector = request.getfixturevalue("inspector")
        found.sign_in(found.admin)


def _texts(b: Browser, css: str) -> list[str]:
    return [b.text(e) for e in b.find_all(css)]


def test_scopes_page_lists_every_scope_with_its_counts(inspector: Inspector) -> None:
    b = inspector.browser
    inspector.sign_in(inspector.admin)
    assert b.url == inspector.url("/")  # the key left the address, a cookie holds it
    assert b.title.startswith("Scopes")
    cells = b.script(
        "return [...document.querySelectorAll('table.scopes tbody tr')].map("
        "r => [...r.cells].map(c => c.innerText))"
    )
    rows = {row[0]: row for row in cells}
    agents = inspector.engine.agents()
    assert set(rows) == {a.scope for a in agents} == {SCOPE, OTHER}
    for agent in agents:
        row = rows[agent.scope]
        assert row[1:4] == [str(agent.episodic), str(agent.semantic), str(agent.procedural)]
        assert row[5] == str(agent.total)
    assert "superseded" in rows[SCOPE][4]
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", rows[SCOPE][7])


def test_search_bars_match_the_ranked_items_scores(inspector: Inspector) -> None:
    b = inspector.browser
    inspector.sign_in(inspector.admin)
    b.open(inspector.url("/scope", scope=SCOPE))
    now, question = "2026-12-31T12:00:00", "When is the launch date?"

    def ranked() -> dict[str, RankedItem]:
        found = inspector.store.search((SCOPE,), query=question, limit=10, min_score=0.5, now=now)
        return {item_id(i.namespace, i.key): i for i in found if isinstance(i, RankedItem)}

    before = ranked()
    b.type(b.find("input[name=q]"), question)
    b.type(b.find("input[name=min_score]"), "0.5")
    b.type(b.find("input[name=now]"), now)
    b.click(b.find("form[role=search] button[type=submit]"))
    b.wait_for("table.results")
    shown = b.script(
        "return [...document.querySelectorAll('table.results tbody tr')].map(r => ({"
        "id: r.id.slice(2), score: Number(r.querySelector('.score').dataset.score),"
        "bars: Object.fromEntries([...r.querySelectorAll('svg.bar')].map("
        "s => [s.dataset.component, Number(s.dataset.value)])),"
        "effects: Number(r.querySelector('.effects').dataset.effects)}))"
    )
    after = ranked()
    assert shown, "no results shown"
    assert [s["id"] for s in shown] == list(before) == list(after)

    def count(frequency: float) -> float:  # frequency is n / (n + 100) of the access count
        return 100 * frequency / (1 - frequency)

    for row in shown:
        item = after[row["id"]]
        assert set(row["bars"]) == set(item.scores)
        for name in ("semantic", "recency", "confidence"):
            assert row["bars"][name] == item.scores[name] == before[row["id"]].scores[name]
        # Only the access counts moved: searches count as uses, the page's between ours.
        seen = count(row["bars"]["frequency"])
        assert seen == pytest.approx(round(seen), abs=1e-6)
        low = count(before[row["id"]].scores["frequency"])
        high = count(item.scores["frequency"])
        assert round(low) + 1 <= round(seen) <= round(high) - 1
        assert row["bars"]["semantic"] >= 0.5
        # The score is its weighted components times the ranking's multipliers (an
        # author not named: 0.67; a when-question of a text that does not say: 0.7).
        assert any(
            row["effects"] == pytest.approx(m, abs=1e-9) for m in (1.0, 0.7, 0.67, 0.7 * 0.67)
        ), row
    left = _texts(b, "table.left-out tbody tr")
    assert any("superseded" in t for t in left), left


def test_what_min_score_leaves_out_is_listed_with_its_relevance(inspector: Inspector) -> None:
    b = inspector.browser
    b.open(inspector.url("/scope", scope=SCOPE, q="launch date volunteers", min_score="0.99"))
    reasons = _texts(b, "table.left-out tbody tr td:nth-child(4)")
    assert any(r.startswith("below min_score: relevance") for r in reasons), reasons


def test_time_control_reproduces_replay(inspector: Inspector) -> None:
    b = inspector.browser
    b.open(inspector.url("/timeline", scope=SCOPE))
    slider = b.find("#at-slider")
    times = json.loads(
        b.script(
            "return arguments[0].dataset.times", {"element-6066-11e4-a52e-4f735466cecf": slider}
        )
    )
    # With the keyboard: Home, then to the middle of the events, then submit.
    target = len(times) // 2
    b.type(slider, "\ue011" + "\ue014" * target)  # Home, then Right arrow
    chosen = b.script("return document.getElementById('at').value")
    assert chosen == times[target]
    b.click(b.find("#replay-button"))
    b.wait_for("table.replay")
    shown = {
        r[len("replay-") :]
        for r in b.script(
            "return [...document.querySelectorAll('table.replay tbody tr')].map(r => r.id)"
        )
    }
    at = datetime.fromisoformat(chosen).replace(tzinfo=timezone.utc)
    replayed = inspector.engine.replay(SCOPE, at)
    assert shown == {m.id for m in replayed}
    assert 0 < len(shown) < len(inspector.engine.state(SCOPE))


def test_the_timeline_lists_the_events_of_a_window(inspector: Inspector) -> None:
    events = inspector.engine.timeline(SCOPE, limit=10_000)
    since = events[len(events) // 2].at
    answer = httpx.get(
        inspector.url("/timeline", scope=SCOPE, since=since.isoformat()),
        headers={"X-API-Key": inspector.key},
    )
    assert answer.status_code == 200
    seqs = re.findall(r"<tr><td>(\d+)</td>", answer.text.split('id="timeline"')[1])
    expected = [e.seq for e in inspector.engine.timeline(SCOPE, since=since, limit=10_000)]
    assert [int(s) for s in seqs] == expected[-1000:]
    assert 0 < len(expected) < len(events)


def test_a_superseded_fact_shows_its_versions_successor_and_reason(inspector: Inspector) -> None:
    b = inspector.browser
    old = inspector.engine.memories(SCOPE, kinds="semantic", statuses="superseded")[0]
    b.open(inspector.url("/memory", scope=SCOPE, id=old.id))
    assert b.find_all("svg rect.interval[data-state=closed]")
    conflict = " ".join(_texts(b, "table.conflicts tbody tr"))
    assert old.value["superseded_by"] in conflict
    events = _texts(b, "table.events tbody tr")
    assert any("memory.superseded" in e for e in events)


def test_a_summary_links_the_episodes_it_came_from(inspector: Inspector) -> None:
    b = inspector.browser
    summary = next(
        m
        for m in inspector.engine.memories(SCOPE, kinds="semantic", limit=1000)
        if m.value.get("source_episodic_ids")
    )
    b.open(inspector.url("/memory", scope=SCOPE, id=summary.id))
    hrefs = b.script("return [...document.querySelectorAll('table.provenance a')].map(a => a.href)")
    for episode in summary.value["source_episodic_ids"][:5]:
        assert any(quote(episode, safe="") in h for h in hrefs)
    session = summary.value["session_id"]
    assert any("session?" in h and quote(session, safe="") in h for h in hrefs)


def test_the_scope_page_plots_growth_and_lists_sessions(inspector: Inspector) -> None:
    b = inspector.browser
    b.open(inspector.url("/scope", scope=SCOPE, kind="semantic", status="superseded"))
    kinds = b.script(
        "return [...document.querySelectorAll('#growth ~ svg polyline.series')]"
        ".map(p => p.dataset.series)"
    )
    assert set(kinds) == {"episodic", "procedural", "semantic"}
    rows = _texts(b, "table.memories tbody tr")
    superseded = inspector.engine.memories(SCOPE, kinds="semantic", statuses="superseded")
    assert len(rows) == len(superseded) > 0
    sessions = _texts(b, "#sessions + ul li")
    assert f"{SCOPE}-s1-kickoff" in sessions


def test_a_session_shows_every_tier_and_the_context_of_a_turn(inspector: Inspector) -> None:
    b = inspector.browser
    session = next(s for s in _session_ids(inspector) if s.endswith("kickoff"))
    b.open(inspector.url("/session", scope=SCOPE, id=session))
    rows = b.script(
        "return [...document.querySelectorAll('table.messages tbody tr')].map("
        "r => [...r.cells].map(c => c.innerText))"
    )
    assert rows
    archived = [r for r in rows if r[10].startswith("archived")]
    assert archived, "the demo's small budget archives the oldest messages"
    for r in rows:
        assert int(r[3]) >= 1  # the required tier
        assert r[8]  # the raw text
        assert int(r[9]) >= int(r[5])  # the raw text costs at least its tier 1
    # The context of the last turn under the server's settings: every window message raw.
    tokens = int(b.script("return document.getElementById('context-tokens').dataset.tokens"))
    assert tokens > 0
    series = b.script(
        "return [...document.querySelectorAll('#tokens + svg polyline.series')]"
        ".map(p => [p.dataset.series, Number(p.dataset.points)])"
    )
    assert dict(series)["raw history"] == dict(series)["tiered window"] > 0
    # The eager policy shows every older message at its tier, labelled.
    turn = rows[len(rows) // 2][0]
    b.open(inspector.url("/session", scope=SCOPE, id=session, turn=turn, policy="eager"))
    lines = _texts(b, ".context .msg pre")
    assert any(re.match(r"\[m\d+\|t[12]\] ", line) for line in lines), lines


def _session_ids(inspector: Inspector) -> list[str]:
    with httpx.Client() as client:
        page = client.get(
            inspector.url("/scope", scope=SCOPE), headers={"X-API-Key": inspector.admin}
        ).text
    return sorted(set(re.findall(r"session\?scope=[^&]+&amp;id=([^\"]+)\"", page)))


def test_stored_html_and_script_are_shown_as_text(inspector: Inspector) -> None:
    b = inspector.browser
    b.open(inspector.url("/memory", scope=SCOPE, id=inspector.payload_id))
    assert PAYLOAD in b.text(b.find("table.memory pre"))
    assert b.script("return window.__pwned === undefined")
    assert not b.find_all("img[src=x]")
    # The page's own style and script run under its Content-Security-Policy (by hash).
    header = b.script("return getComputedStyle(document.querySelector('header')).borderBottomStyle")
    assert header == "solid"
    b.open(inspector.url("/scope", scope=SCOPE, q="window pwned script done"))
    assert b.script("return window.__pwned === undefined")
    assert any("<script>" in t for t in _texts(b, "table.results tbody tr"))


def test_a_scoped_key_gets_403_on_another_scopes_pages(inspector: Inspector) -> None:
    b = inspector.browser
    inspector.sign_in(inspector.other_key)
    assert _texts(b, "table.scopes tbody tr td:first-child") == [OTHER]
    some = inspector.engine.memories(SCOPE, limit=1)[0]
    pages = [
        ("/scope", {"scope": SCOPE}),
        ("/memory", {"scope": SCOPE, "id": some.id}),
        ("/timeline", {"scope": SCOPE}),
        ("/session", {"scope": SCOPE, "id": f"{SCOPE}-s1-kickoff"}),
    ]
    for path, params in pages:
        b.open(inspector.url(path, **params))
        assert b.title.startswith("403"), (path, b.title)
        status = httpx.get(
            inspector.url(path, **params), headers={"X-API-Key": inspector.other_key}
        ).status_code
        assert status == 403
    # Its own scope opens; a memory id of the other scope is not found through it.
    b.open(inspector.url("/scope", scope=OTHER))
    assert b.title.startswith(f"Scope {OTHER}")
    b.open(inspector.url("/memory", scope=OTHER, id=some.id))
    assert b.title.startswith("404")
    b.open(inspector.url("/session", scope=OTHER, id=f"{SCOPE}-s1-kickoff"))
    assert b.title.startswith("404")
    # No key, or a wrong one: the sign-in form.
    assert httpx.get(inspector.url("/")).status_code == 401
    assert httpx.get(inspector.url("/", key="lmt_wrong")).status_code == 401
    # The demo user's own key: its scope, and 403 on the other one.
    inspector.sign_in(inspector.key)
    b.open(inspector.url("/scope", scope=SCOPE))
    assert b.title.startswith(f"Scope {SCOPE}")
    b.open(inspector.url("/timeline", scope=OTHER))
    assert b.title.startswith("403")


def test_bad_parameters_get_a_page_naming_the_field(inspector: Inspector) -> None:
    admin = {"X-API-Key": inspector.admin}
    for path, params, field in [
        ("/timeline", {"scope": SCOPE, "at": "last tuesday"}, "at"),
        ("/scope", {"scope": SCOPE, "q": "x", "min_score": "2"}, "min_score"),
        ("/scope", {"scope": SCOPE, "kind": "dreams"}, "kind"),
        ("/session", {"scope": SCOPE, "id": f"{SCOPE}-s1-kickoff", "policy": "all"}, "policy"),
        ("/memory", {"scope": SCOPE}, "id"),
    ]:
        answer = httpx.get(inspector.url(path, **params), headers=admin)
        assert answer.status_code == 422, (path, params)
        assert re.search(rf"<p role=\"alert\" id=\"error\">{field} ", answer.text), answer.text


def test_sign_out_then_in_with_the_form(inspector: Inspector) -> None:
    b = inspector.browser
    b.open(inspector.url("/logout"))
    b.open(inspector.url("/"))
    assert b.title.startswith("401")
    b.type(b.find("input[name=key]"), inspector.key)
    b.click(b.find("form button[type=submit]"))
    b.wait_for("table.scopes")
    assert _texts(b, "table.scopes tbody tr td:first-child") == [SCOPE]


def test_inspect_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: langmem-tiers inspect")
    assert "--url" in out
    assert "--port" in out


def test_inspect_prints_a_link_that_signs_in(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'i.db'}"
    with TieredMemoryStore.from_url(url) as store:
        MemoryEngine(store).add_semantic("someone", "Someone likes tea.")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "langmem_tiers", "inspect", "--url", url, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        link = re.search(r"http://127\.0\.0\.1:\d+/ui/\?key=\S+", line)
        assert link, line
        deadline = time.monotonic() + 30
        with httpx.Client(follow_redirects=True) as client:
            while True:
                try:
                    page = client.get(link.group(0))
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline, "inspect did not start"
                    time.sleep(0.1)
            assert page.status_code == 200
            assert "someone" in page.text
            # The token is for the inspector only, not the API.
            token = link.group(0).split("key=")[1]
            api = client.get(f"http://127.0.0.1:{port}/api/v1/agents", headers={"X-API-Key": token})
            assert api.status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=10)
