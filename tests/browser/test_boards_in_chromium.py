"""The multi-metric board and the topic page in headless Chromium against a real `cranfield serve`
(the service, browser and helpers of test_portal_in_chromium.py): sorting by a column heading
with JavaScript (in place, no reload) and without (the server sorts), the table on a phone's
width, the topic page's chart and table. Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.browser.test_portal_in_chromium import Service, browser, browsing, service, shot, sign_in  # noqa: F401


def metrics_api(svc: Service, role: str, **params: str) -> dict[str, Any]:
    r = httpx.get(f"{svc.base}/api/collections/{svc.cid}/leaderboard/metrics", params=params,
                  headers={"Authorization": f"Bearer {svc.tokens[role]}"})
    assert r.status_code == 200, r.text
    return r.json()


def rows(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator("#metrics-board tbody tr").evaluate_all("rows => rows.map(r => r.dataset.run)")


def ranks(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator("#metrics-board tbody td.rank").all_inner_texts()


def shown_rank(rank: int | None) -> str:
    return "–" if rank is None else str(rank)


def test_multi_metric_board_sorts_in_place_with_javascript(service: Service, browser: object) -> None:  # noqa: F811
    with browsing(browser, "metrics-js") as page:
        sign_in(page, service.base, service.tokens["organiser"])
        page.goto(f"{service.base}/c/{service.cid}/metrics")
        official = metrics_api(service, "organiser")
        assert rows(page) == [r["run"] for r in official["rows"]]
        assert page.locator('th[data-sort-key="nDCG@10"]').get_attribute("aria-sort") == "descending"
        title = page.locator('th[data-sort-key="nDCG@10"] a').get_attribute("title")
        assert "Järvelin & Kekäläinen" in title and "higher is better" in title
        page.evaluate("window.notReloaded = true")
        for metric in ("AP", "ERR@10", "P@10", "Q"):
            page.locator(f'th[data-sort-key="{metric}"] a').click()
            expected = metrics_api(service, "organiser", sort=metric)
            assert rows(page) == [r["run"] for r in expected["rows"]], metric
            assert ranks(page) == [shown_rank(r["ranks"][metric]) for r in expected["rows"]], metric
            assert page.locator(f'th[data-sort-key="{metric}"]').get_attribute("aria-sort") == "descending"
            assert page.locator('th[data-sort-key="nDCG@10"]').get_attribute("aria-sort") is None
            assert page.url.endswith(f"sort={metric.replace('@', '%40')}")
            assert page.locator("#sort").input_value() == metric
        shot(page, "30-metrics-sorted-by-Q")
        page.locator('th[data-sort-key="run"] a').click()
        assert rows(page) == sorted(rows(page)) and page.evaluate("window.notReloaded") is True
        page.locator('th[data-sort-key="team"] a').click()
        by_team = metrics_api(service, "organiser", sort="team")
        assert rows(page) == [r["run"] for r in by_team["rows"]]
        assert ranks(page) == [shown_rank(r["ranks"]["nDCG@10"]) for r in by_team["rows"]]
        assert page.evaluate("window.notReloaded") is True  # sorted in place: no page load
        # the selector still submits on change, and the server agrees with the in-place order
        with page.expect_navigation():
            page.get_by_label("Sort by").select_option("AP")
        assert rows(page) == [r["run"] for r in metrics_api(service, "organiser", sort="AP")["rows"]]


def test_multi_metric_board_sorts_on_the_server_without_javascript(service: Service, browser: object) -> None:  # noqa: F811
    with browsing(browser, "metrics-nojs", javascript=False) as page:
        sign_in(page, service.base, service.tokens["alpha"])
        page.goto(f"{service.base}/c/{service.cid}/metrics")
        assert rows(page) == [r["run"] for r in metrics_api(service, "alpha")["rows"]]
        for metric in ("AP", "P@10"):
            with page.expect_navigation():
                page.locator(f'th[data-sort-key="{metric}"] a').click()  # a link: the server sorts
            assert f"sort={metric.replace('@', '%40')}" in page.url
            expected = metrics_api(service, "alpha", sort=metric)
            assert rows(page) == [r["run"] for r in expected["rows"]]
            assert ranks(page) == [shown_rank(r["rank"]) for r in expected["rows"]]
        page.get_by_label("Sort by").select_option("ERR@10")  # no JavaScript: the button submits
        with page.expect_navigation():
            page.get_by_role("button", name="Show").click()
        assert rows(page) == [r["run"] for r in metrics_api(service, "alpha", sort="ERR@10")["rows"]]
        page.get_by_label("Run type").select_option("manual")
        with page.expect_navigation():
            page.get_by_role("button", name="Show").click()
        assert "run_type=manual" in page.url
        assert rows(page) == [r["run"] for r in metrics_api(service, "alpha", sort="ERR@10",
                                                            run_type="manual")["rows"]]
        shot(page, "31-metrics-without-javascript")


def test_multi_metric_board_reads_on_a_phone(service: Service, browser: object) -> None:  # noqa: F811
    with browsing(browser, "metrics-phone") as page:
        page.set_viewport_size({"width": 390, "height": 844})
        sign_in(page, service.base, service.tokens["organiser"])
        page.goto(f"{service.base}/c/{service.cid}/metrics")
        box = page.locator(".table-scroll").first
        assert box.evaluate("el => el.scrollWidth > el.clientWidth")  # the table scrolls sideways...
        assert page.evaluate("document.documentElement.scrollWidth") <= 400  # ...not the page
        first = page.locator("#metrics-board tbody tr th").first
        before = first.bounding_box()
        box.evaluate("el => { el.scrollLeft = 300; }")
        after = first.bounding_box()
        assert before and after and abs(after["x"] - before["x"]) < 1  # the run column stays in view
        assert page.locator("#metrics-board tbody td").first.bounding_box()["x"] < before["x"] + 300  # type: ignore
        shot(page, "32-metrics-on-a-phone")


def test_topic_page_shows_difficulty_and_the_own_runs(service: Service, browser: object) -> None:  # noqa: F811
    doc = httpx.get(f"{service.base}/api/collections/{service.cid}/topic-analysis",
                    headers={"Authorization": f"Bearer {service.tokens['beta']}"}).json()
    with browsing(browser, "topics") as page:
        sign_in(page, service.base, service.tokens["beta"])
        page.goto(f"{service.base}/c/{service.cid}")
        page.get_by_role("link", name="Topics", exact=True).click()
        assert page.url.endswith(f"/c/{service.cid}/topics")
        assert page.locator("figure svg[role=img]").count() == 1
        topics = page.locator("#topics tbody tr").evaluate_all("rows => rows.map(r => r.dataset.topic)")
        assert topics == [i["topic"] for i in doc["items"]] and doc["runs_from"] == "all"
        assert page.locator("#topics thead th", has_text="(yours)").count() == len(doc["own_runs"]) == 2
        assert page.locator("nav.collection a[aria-current=page]").inner_text() == "Topics"
        with page.expect_navigation():
            page.get_by_label("Metric", exact=True).select_option("AP")
        assert "metric=AP" in page.url
        shot(page, "33-topics")
        href = page.get_by_role("link", name="this table (CSV)").get_attribute("href")
        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        text = httpx.get(f"{service.base}{href}", cookies=cookies).text
        assert text.splitlines()[0] == "topic,runs,median,q1,q3,min,best,best_runs,missing_runs,min_submitted"
