"""The organisers' console in headless Chromium against a real `cranfield serve` (the fixtures of
test_portal_in_chromium.py: a released collection of 6 evaluated runs of 3 teams).

An organiser changes the gains with the preview and its confirmation and sees the runs
re-evaluated, creates a participant token and sees it once (with the copy button), withdraws
and releases the board; then, with JavaScript off, the same forms work: a settings change, a
token (selectable text, no copy button), a qrels upload previewed and confirmed.
"""

from __future__ import annotations

import re

import httpx

from tests.browser import test_portal_in_chromium as portal
from tests.browser.test_portal_in_chromium import _A11Y_CHECK, Service, browsing, shot, sign_in
from tests.integration.conftest import wait_for

# the portal's browser tests' fixtures: a served, evaluated collection, and Chromium
service = portal.service
browser = portal.browser


def _api(service: Service, path: str) -> dict:  # type: ignore[type-arg]
    r = httpx.get(service.base + path, headers={"Authorization": f"Bearer {service.tokens['organiser']}"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def accessible(page, what: str) -> None:  # type: ignore[no-untyped-def]
    """The page's labels, headings, image names and contrast (the portal's browser test's check)."""
    report = page.evaluate(_A11Y_CHECK)
    assert report["lang"] == "en" and report["h1"] == 1, (what, report)
    assert not report["unlabelled"], (what, report["unlabelled"])
    assert not report["low_contrast"], (what, report["low_contrast"][:5])


def test_organiser_previews_and_saves_settings_creates_a_token_and_releases(service: Service,
                                                                            browser: object) -> None:
    base, cid = service.base, service.cid
    before = _api(service, f"/api/collections/{cid}")
    with browsing(browser, "console") as page:
        sign_in(page, base, service.tokens["organiser"])
        page.goto(f"{base}/c/{cid}")
        page.get_by_role("navigation", name=f"Collection {before['name']}").get_by_role("link", name="Console").click()
        page.wait_for_url(f"{base}/c/{cid}/console")
        assert "released" in page.inner_text("#board-state")
        shot(page, "20-console")

        # settings: gains for the levels, previewed, then confirmed
        page.get_by_role("link", name="Settings").click()
        page.wait_for_url(f"{base}/c/{cid}/console/settings")
        for row, (level, gain) in enumerate(((1, "1"), (2, "3"), (3, "7"))):
            page.get_by_label(f"Level, row {row + 1}", exact=True).fill(str(level))
            page.get_by_label(f"Gain, row {row + 1}", exact=True).fill(gain)
        shot(page, "21-console-settings")
        with page.expect_navigation():
            page.get_by_role("button", name="Preview the change").click()
        consequences = page.inner_text("#consequences")
        assert "re-evaluates 6 of 6 runs" in consequences, consequences
        assert _api(service, f"/api/collections/{cid}")["config_version"] == before["config_version"]  # not yet
        shot(page, "22-console-preview")
        with page.expect_navigation():
            page.get_by_role("button", name="Confirm and save").click()
        assert "saved=1" in page.url and "Settings saved" in page.inner_text("#saved")
        after = _api(service, f"/api/collections/{cid}")
        assert after["config_version"] == before["config_version"] + 1
        assert [(lv["level"], lv["gain"]) for lv in after["levels"]] == [(1, 1.0), (2, 3.0), (3, 7.0)]
        job = _api(service, f"/api/collections/{cid}/jobs")["items"][0]
        assert job["kind"] == "config" and job["total"] == 6
        wait_for(lambda: _api(service, f"/api/jobs/{job['id']}")["status"] == "done", 180, "the re-evaluation")

        # a participant token, shown once, with the copy button
        page.goto(f"{base}/c/{cid}/teams")
        row = page.locator('#teams tr[data-team="alpha"]')
        row.get_by_label("Holder's name").fill("alpha-2")
        with page.expect_navigation():
            row.get_by_role("button", name="Create a token for team alpha").click()
        secret = page.get_by_label("Token", exact=True).input_value()
        assert secret.startswith("cf_")
        copy = page.get_by_role("button", name="Copy")
        assert copy.is_visible()
        copy.click()
        page.locator('[data-copied="new-token"]', has_text="Copied.").wait_for()
        shot(page, "23-console-token-once")
        assert httpx.get(f"{base}/api/collections", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
        page.goto(f"{base}/c/{cid}/teams")
        assert page.locator("#new-token").count() == 0 and secret not in page.content()

        # withdraw and release the board with the console's buttons
        page.goto(f"{base}/c/{cid}/console")
        with page.expect_navigation():
            page.get_by_role("button", name="Withdraw the board").click()
        assert page.inner_text("#board-state") == "not released"
        assert not _api(service, f"/api/collections/{cid}")["leaderboard_released"]
        with page.expect_navigation():
            page.get_by_role("button", name="Release the board").click()
        assert page.inner_text("#board-state") == "released"
        assert _api(service, f"/api/collections/{cid}")["leaderboard_released"]
        page.get_by_role("link", name="Audit log").click()
        page.wait_for_url(f"{base}/c/{cid}/console/audit")
        actions = page.locator("#audit tbody tr").evaluate_all("rows => rows.map(r => r.dataset.action)")
        assert actions[:4] == ["leaderboard.release", "leaderboard.release", "token.create", "config.update"], actions
        shot(page, "24-console-audit")


def test_the_console_forms_work_without_javascript(service: Service, browser: object) -> None:
    base, cid = service.base, service.cid
    with browsing(browser, "console-no-js", javascript=False) as page:
        sign_in(page, base, service.tokens["organiser"])
        page.goto(f"{base}/c/{cid}/console/settings")
        page.get_by_label("Description", exact=True).fill("Edited without JavaScript.")
        page.get_by_label("Daily run quota per team").fill("5")
        with page.expect_navigation():
            page.get_by_role("button", name="Preview the change").click()
        assert "Each team may submit 5 valid runs per UTC day." in page.inner_text("#consequences")
        accessible(page, "the settings preview")
        with page.expect_navigation():
            page.get_by_role("button", name="Confirm and save").click()
        coll = _api(service, f"/api/collections/{cid}")
        assert coll["description"] == "Edited without JavaScript." and coll["daily_run_quota"] == 5
        shot(page, "25-console-settings-without-javascript")

        # a token without JavaScript: selectable text, no copy button
        page.goto(f"{base}/c/{cid}/teams")
        with page.expect_navigation():
            page.get_by_role("button", name="Create a token for team beta").click()
        assert page.get_by_label("Token", exact=True).input_value().startswith("cf_")
        assert not page.locator('button[data-copy="new-token"]').is_visible()

        # a qrels upload: previewed, then a large removal confirmed with the box ticked
        page.goto(f"{base}/c/{cid}/qrels")
        lines = service.qrels.splitlines()
        half = service.tmp / "half.qrels"
        half.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
        page.get_by_label("Qrels file").set_input_files(str(half))
        with page.expect_navigation():
            page.get_by_role("button", name="Preview the change").click()
        assert page.locator("#large-removal").count() == 1
        totals = page.inner_text("#preview-totals")
        assert re.search(r"\d+ removed", totals), totals
        versions = len(_api(service, f"/api/collections/{cid}/qrels")["items"])
        accessible(page, "the qrels preview")
        shot(page, "26-qrels-preview-without-javascript")
        page.get_by_label(re.compile(r"Yes, remove \d+ judgments")).check()
        with page.expect_navigation():
            page.get_by_role("button", name="Store as the next version and re-evaluate").click()
        assert "uploaded=" in page.url
        stored = _api(service, f"/api/collections/{cid}/qrels")
        assert len(stored["items"]) == versions + 1 and stored["items"][-1]["judgments"] == len(lines) // 2

        # the run management table: mark a baseline
        page.goto(f"{base}/c/{cid}/console/runs")
        first = page.locator("#console-runs tbody tr").first
        tag = first.get_attribute("data-run")
        with page.expect_navigation():
            first.get_by_role("button", name=f"Mark {tag} as a baseline").click()
        runs = {r["tag"]: r for r in _api(service, f"/api/collections/{cid}/runs")["items"]}
        assert runs[tag]["baseline"]
        shot(page, "27-console-runs-without-javascript")
        for path in ("console", "console/settings", "console/runs", "console/assessors", "console/audit",
                     "topics/texts", "teams", f"console/runs/{runs[tag]['id']}/delete"):
            page.goto(f"{base}/c/{cid}/{path}")
            accessible(page, path)
