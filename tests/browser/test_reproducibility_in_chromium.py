"""A reproducibility track walked in headless Chromium against a real `cranfield serve` (issue 28;
the service, browser and helpers of test_portal_in_chromium.py): the organiser registers an
original pair on the portal's reproducibility page; two teams submit reproductions with the
client (`cranfield remote submit --reproduces`, `--reproduces-pair`); the served worker measures
them; the board shows each reproduction's measures and verdict as the API gives them, the
ER/DeltaRI plane and a reproduction's per-topic page. Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import httpx

from tests.browser.test_portal_in_chromium import Service, browser, browsing, service, shot, sign_in  # noqa: F401
from tests.integration.conftest import REPO, wait_for


def _api(svc: Service, role: str) -> httpx.Client:
    return httpx.Client(base_url=svc.base, timeout=30, headers={"Authorization": f"Bearer {svc.tokens[role]}"})


def _remote(svc: Service, role: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_")}
    env.update(PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(svc.tmp / "client-config"), CRANFIELD_URL=svc.base,
               CRANFIELD_TOKEN=svc.tokens[role])
    return subprocess.run([sys.executable, "-m", "service.cli", "remote", *args], env=env, cwd=svc.tmp,
                          capture_output=True, text=True, timeout=180, check=False)


def _retagged(text: str, tag: str) -> str:
    return "".join(" ".join([*line.split()[:5], tag]) + "\n" for line in text.splitlines() if line.strip())


def test_a_reproducibility_track_in_the_browser(service: Service, browser: object) -> None:  # noqa: F811
    with _api(service, "organiser") as c:
        runs = c.get(f"/api/collections/{service.cid}/runs").json()["items"]
        gamma = sorted((r for r in runs if r["team"] == "gamma"), key=lambda r: r["id"])
        base_run, adv_run = gamma[0], gamma[1]
        texts = {r["id"]: c.get(f"/api/runs/{r['id']}/file").text for r in (base_run, adv_run)}

    # the organiser registers the original pair on the page
    with browsing(browser, "repro-organiser") as page:
        sign_in(page, service.base, service.tokens["organiser"])
        page.goto(f"{service.base}/c/{service.cid}/reproducibility")
        assert page.locator("#no-originals").count() == 1
        page.get_by_label("Run id (of a pair, the baseline)").fill(str(base_run["id"]))
        page.get_by_label("Advanced run id (a pair)").fill(str(adv_run["id"]))
        page.get_by_label("Label").fill("gamma's paper")
        with page.expect_navigation():
            page.get_by_role("button", name="Register").click()
        assert page.locator("#done").count() == 1
        assert page.locator("#originals tbody tr").count() == 1
        assert f"{base_run['tag']} + {adv_run['tag']}" in page.locator("#originals").inner_text()

    # two teams submit reproductions with the client
    b_file, a_file = service.tmp / "alpha-b.run", service.tmp / "alpha-a.run"
    b_file.write_text(_retagged(texts[base_run["id"]], "alpha-rep-b"))
    a_file.write_text(_retagged(texts[adv_run["id"]], "alpha-rep-a"))
    done = _remote(service, "alpha", "submit", str(service.cid), str(b_file), "--reproduces", str(base_run["id"]))
    assert done.returncode == 0, done.stderr
    my_b = int(done.stdout.split()[1])
    done = _remote(service, "alpha", "submit", str(service.cid), str(a_file), "--reproduces", str(adv_run["id"]),
                   "--reproduces-pair", str(my_b), str(base_run["id"]))
    assert done.returncode == 0, done.stderr
    _, beta_text = service.runs.popitem() if len(service.runs) > 6 else (None, None)
    beta_file = service.tmp / "beta-rep.run"
    beta_file.write_text(_retagged(beta_text or texts[adv_run["id"]], "beta-rep-a"))
    done = _remote(service, "beta", "submit", str(service.cid), str(beta_file), "--reproduces", str(adv_run["id"]))
    assert done.returncode == 0, done.stderr

    def measured() -> dict[str, Any] | None:
        with _api(service, "organiser") as c:
            doc = c.get(f"/api/collections/{service.cid}/reproducibility").json()
        ready = len(doc["rows"]) == 2 and not doc["stale"] and all(r["baseline"] for r in doc["rows"])
        return doc if ready else None

    api = wait_for(measured, 180, "the reproductions' measures")
    pair = next(r for r in api["rows"] if r["kind"] == "pair")
    single = next(r for r in api["rows"] if r["kind"] == "run")
    assert pair["run"]["team"] == "alpha" and single["run"]["team"] == "beta"
    # alpha's runs are the originals re-tagged: the effect is reproduced at its size
    assert pair["verdict"].startswith("effect reproduced: ER 1.00 [1.00, 1.00], DeltaRI 0.00"), pair["verdict"]

    # the board shows the measures and the plot
    with browsing(browser, "repro-board") as page:
        sign_in(page, service.base, service.tokens["alpha"])
        page.goto(f"{service.base}/c/{service.cid}/reproducibility")
        rows = page.locator("#repro-board tbody tr")
        assert rows.count() == 3  # the board is released: every reproduction, a pair on two rows
        for row in api["rows"]:
            tr = page.locator(f'#repro-board tbody tr[data-reproduction="{row["id"]}"]').first
            assert tr.locator("td.verdict").inner_text() == row["verdict"]
        # a pair shows each of its runs' own figures, each row saying whose (issue 37, item 8)
        for part in ("baseline", "advanced"):
            tr = page.locator(f'#repro-board tbody tr[data-reproduction="{pair["id"]}"][data-part="{part}"]')
            run = pair["run"] if part == "baseline" else pair["advanced_run"]
            assert tr.locator("td.part").inner_text() == f"{part}: {run['tag']}"
            cells = tr.locator("td.num").all_inner_texts()
            assert f"{pair[part]['RMSE']:.4f}" in cells, (part, cells)
        figure = page.locator("#plane svg[role=img]")
        assert figure.count() == 1
        assert f"ER {pair['effect']['ER']:.2f}, DeltaRI {pair['effect']['DeltaRI']:.2f}" in (
            figure.get_attribute("aria-label") or "")
        shot(page, "40-reproducibility-board")
        # on a phone each reproduction is a card: its verdict and figures on the screen, nothing
        # to scroll sideways for (issue 37, item 10)
        page.set_viewport_size({"width": 390, "height": 844})
        page.reload()
        seen = page.locator("#repro-board").evaluate("""t => {
          const row = t.querySelector('tbody tr');
          const cells = [...row.querySelectorAll('td, th')].filter(c => getComputedStyle(c).display !== 'none');
          return {page: document.documentElement.scrollWidth, inner: window.innerWidth,
                  right: Math.max(...cells.map(c => c.getBoundingClientRect().right)),
                  labels: cells.map(c => c.dataset.label)};
        }""")
        assert seen["page"] <= seen["inner"] and seen["right"] <= seen["inner"], seen
        assert {"Verdict", "KTU", "RMSE", "ER"} <= set(seen["labels"]), seen
        shot(page, "40-reproducibility-board-phone")
        page.set_viewport_size({"width": 1280, "height": 900})
        page.locator(f'#repro-board tbody tr[data-reproduction="{pair["id"]}"] a').click()
        assert page.url.endswith(f"/reproducibility/{pair['id']}?metric=nDCG%4010")
        assert page.locator("table.repro-topics").count() == 2 + 3  # KTU/RBO per role, baseline, advanced, effect
        shot(page, "41-reproduction-per-topic")
        # another metric: the board again, on AP
        page.goto(f"{service.base}/c/{service.cid}/reproducibility")
        page.get_by_label("Metric").select_option("AP")
        with page.expect_navigation():
            page.get_by_role("button", name="Show").click()
        assert "metric=AP" in page.url and "Reproductions on AP" in page.locator("#repro-board caption").inner_text()
