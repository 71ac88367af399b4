"""docs/walkthrough.md, step by step, in headless Chromium against a fresh `cranfield serve`.

The service starts empty (no sample) on the embedded default, in a temporary folder (its SQLite
database and broker folder there); the first admin token comes from `cranfield token create
--role admin` against the same database, as the walkthrough's step 2 says. Everything else is
done as the walkthrough does it: the organisers in the portal's forms (Playwright fills them by
their labels), the participants in the portal and with `cranfield remote` (subprocesses, each
with its own XDG_CONFIG_HOME). The data are the repository's samples/ntcir-like.

The doc and the test are kept in step: every heading `## Step N: title` of docs/walkthrough.md
is a step of this test, in the same order (a test without Chromium checks the list), and the
values this test types (metrics, gains, labels, commands) must appear in their step's section.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.browser import test_portal_in_chromium as portal
from tests.browser.test_portal_in_chromium import _require_chromium, browsing, shot, sign_in
from tests.integration.conftest import REPO, wait_for
from tests.integration.test_api_server import stop
from tests.support.ports import free_port

browser = portal.browser  # Chromium, as the portal's browser tests drive it

DOC = REPO / "docs" / "walkthrough.md"
SAMPLE = REPO / "samples" / "ntcir-like"
STEPS = [
    "Start the service",
    "Create the first admin token",
    "Sign in to the portal",
    "Create the collection",
    "Register the topics and their titles",
    "Hand the collection to an organiser",
    "Create and enrol the teams",
    "Give each team a participant token",
    "Upload the qrels",
    "Participants submit their runs",
    "Watch the evaluation",
    "Mark the baselines",
    "Release the board",
    "Read the board and its significance",
    "Freeze a snapshot",
    "Check what participants see",
]
HEADING = re.compile(r"^## Step (\d+): (.+?)\s*$", re.MULTILINE)

COLLECTION = "ntcir-like"
METRICS = ["nDCG@10", "Q", "AP", "nERR@10", "P@10"]
LEVELS = [("1", "L1", "1"), ("2", "L2", "3"), ("3", "L3", "7")]
TESTED = ["nDCG@10", "AP"]
TITLES = {"0001": "Effects of caffeine on sleep", "0002": "History of the Cranfield experiments",
          "0003": "Graded relevance in test collections"}
# team -> (run files, how they are submitted); the baselines team's run is the organisers'
TEAMS = {"alpha": ["RUN-01", "RUN-02"], "beta": ["RUN-03", "RUN-04"], "gamma": ["RUN-05", "RUN-06", "RUN-07"],
         "baselines": ["RUN-08"]}
PARTICIPANTS = ["alpha", "beta", "gamma"]


# ------------------------------------------------------------------------------ the doc
def doc_steps(text: str | None = None) -> list[str]:
    """The walkthrough's step titles, checked to be numbered 1, 2, 3... in order."""
    found = HEADING.findall(DOC.read_text() if text is None else text)
    assert [int(n) for n, _ in found] == list(range(1, len(found) + 1)), f"{DOC} numbers its steps out of order"
    return [title for _, title in found]


def doc_section(title: str) -> str:
    """The text of the step titled ``title``, up to the next step (or the next level-2 heading)."""
    text = DOC.read_text()
    n = STEPS.index(title) + 1
    start = text.index(f"## Step {n}: {title}")
    rest = text[start + 1:]
    end = re.search(r"^## ", rest, re.MULTILINE)
    return " ".join((rest[: end.start()] if end else rest).split())  # line breaks as spaces


class Walk:
    """The steps as they run: each must be the doc's next step and name what the test types."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    @contextmanager
    def step(self, title: str, *mentions: str) -> Iterator[None]:
        assert len(self.ran) < len(STEPS) and STEPS[len(self.ran)] == title, (self.ran, title)
        section = doc_section(title)
        missing = [m for m in mentions if m not in section]
        assert not missing, f"docs/walkthrough.md's step {title!r} does not mention {missing}"
        yield
        self.ran.append(title)


def test_the_walkthrough_lists_the_steps_this_test_follows() -> None:
    """A step added, removed, renamed or moved in the doc fails here until the test follows it."""
    assert doc_steps() == STEPS
    text = DOC.read_text()
    for n, title in enumerate(STEPS, 1):  # the table of contents links each step's anchor
        anchor = re.sub(r"[^a-z0-9 -]", "", f"step {n}: {title}".lower()).replace(" ", "-")
        assert f"(#{anchor})" in text, f"the contents of {DOC.name} do not link #{anchor}"


# ------------------------------------------------------------------------------ helpers
def _clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_")}
    env["PYTHONPATH"] = str(REPO)
    env["XDG_CONFIG_HOME"] = str(tmp / "config-nobody")
    return env


def cranfield(tmp: Path, *args: str, config: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """`cranfield ARGS` in the service's folder; `config` names the user whose config folder it reads."""
    env = _clean_env(tmp)
    if config:
        env["XDG_CONFIG_HOME"] = str(tmp / f"config-{config}")
    done = subprocess.run([sys.executable, "-m", "service.cli", *args], check=False, cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=180)
    if check:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def new_token(page) -> str:  # type: ignore[no-untyped-def]
    """The token shown once on the answer to a form that created it."""
    secret = page.get_by_label("Token", exact=True).input_value()
    assert secret.startswith("cf_"), secret
    return secret


def nav(page, link: str) -> None:  # type: ignore[no-untyped-def]
    """Follow a link of the collection's navigation."""
    page.get_by_role("navigation", name=f"Collection {COLLECTION}").get_by_role("link", name=link, exact=True).click()


def console_nav(page, link: str) -> None:  # type: ignore[no-untyped-def]
    """Follow a link of the console's own navigation."""
    page.get_by_role("navigation", name=f"Console of {COLLECTION}").get_by_role("link", name=link, exact=True).click()


def board_order(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator("#leaderboard tbody tr").evaluate_all("rows => rows.map(r => r.dataset.run)")


def board_column(page, heading: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The board's cells under a column heading, row by row."""
    headings = [h.strip() for h in page.locator("#leaderboard thead th").all_inner_texts()]
    n = headings.index(heading) + 1
    return [t.strip() for t in page.locator(f"#leaderboard tbody tr > :nth-child({n})").all_inner_texts()]


def _tested(base: str, cid: int, token: str, runs: int) -> bool:
    """Every run on the board, with the stored test (the group letters) and nothing pending."""
    board = httpx.get(f"{base}/api/collections/{cid}/leaderboard", headers={"Authorization": f"Bearer {token}"},
                      timeout=10).json()
    return (len(board["rows"]) == runs and board["significance"] is not None and not board["reevaluation_in_progress"]
            and all(r.get("groups") for r in board["rows"]))


def _trec_scores(text: str) -> dict[tuple[str, str], str]:
    """(measure, topic) -> value of trec_eval's -q layout, without its runid line."""
    return {(m, t): v for m, t, v in (line.split("\t") for line in text.splitlines()) if m != "runid"}


def _api_scores(base: str, rid: int, token: str, metrics: list[str]) -> dict[tuple[str, str], str]:
    """The same figures from the API's JSON scores of run ``rid`` (4 decimals, the layout's)."""
    got: dict[tuple[str, str], str] = {}
    for metric in metrics:
        doc = httpx.get(f"{base}/api/runs/{rid}/scores", params={"metric": metric}, timeout=10,
                        headers={"Authorization": f"Bearer {token}"}).json()
        (scores,) = doc["runs"].values()
        got |= {(metric, t): f"{v:.4f}" for t, v in scores["per_topic"].items() if v is not None}
        got[(metric, "all")] = f"{scores['mean']:.4f}"
    return got


# ------------------------------------------------------------------------------ the walkthrough
def test_the_walkthrough_from_an_admin_token_to_a_released_board(tmp_path: Path, browser: object) -> None:
    _require_chromium()
    tmp, walk = tmp_path, Walk()
    runs = {tag: SAMPLE / "runs" / f"{tag}.run" for tags in TEAMS.values() for tag in tags}
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    with walk.step("Start the service", "cranfield serve"):
        server = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port)], cwd=tmp,
                                  env=_clean_env(tmp), start_new_session=True,
                                  stdout=open(tmp / "serve.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        wait_for(lambda: _ready(base), 60, "the service")
        with walk.step("Create the first admin token", "cranfield token create --role admin --name root"):
            admin = cranfield(tmp, "token", "create", "--role", "admin", "--name", "root").stdout.strip()
            assert admin.startswith("cf_")

        with browsing(browser, "walkthrough-organiser") as page:
            with walk.step("Sign in to the portal", "/login", "API token", "Sign in"):
                sign_in(page, base, admin)
                assert "Signed in as root (admin)" in page.inner_text("header")
                shot(page, "walkthrough-03-signed-in")

            with walk.step("Create the collection", "/collections/new", COLLECTION, *METRICS, *TESTED, "holm",
                           "Official metric", "Relevance levels and gains", "Metrics tested",
                           "Multiple-comparison correction", "Create the collection"):
                page.get_by_role("link", name="New collection").click()
                page.wait_for_url(f"{base}/collections/new")
                page.get_by_label("Name", exact=True).fill(COLLECTION)
                page.get_by_label("Description", exact=True).fill(
                    "An NTCIR-style ad hoc task: 20 topics, graded judgments (L0 to L3).")
                page.get_by_label("Official metric").fill("nDCG@10")
                page.get_by_label("Metrics", exact=True).fill("\n".join(METRICS))
                for row, (level, label, gain) in enumerate(LEVELS, 1):
                    page.get_by_label(f"Level, row {row}", exact=True).fill(level)
                    page.get_by_label(f"Label, row {row}", exact=True).fill(label)
                    page.get_by_label(f"Gain, row {row}", exact=True).fill(gain)
                page.get_by_label("Multiple-comparison correction").select_option("holm")
                page.get_by_label("Metrics tested").fill("\n".join(TESTED))
                shot(page, "walkthrough-04-new-collection")
                with page.expect_navigation():
                    page.get_by_role("button", name="Create the collection").click()
                match = re.fullmatch(rf"{re.escape(base)}/c/(\d+)/console\?done=created", page.url)
                assert match, page.url
                cid = int(match.group(1))
                assert "Collection created" in page.inner_text("#done")
                state = page.inner_text("#state")
                assert "nDCG@10 (of 5 metrics" in state and "private" in state and "invite" in state, state
                shot(page, "walkthrough-04-console")

            with walk.step("Register the topics and their titles", "/c/{cid}/topics/texts", "Topic ids",
                           "Register the topics", "Save the topic", *TITLES):
                nav(page, "Topic statements")
                page.wait_for_url(f"{base}/c/{cid}/topics/texts")
                topics = sorted({line.split()[0] for line in (SAMPLE / "qrels.ntcir").read_text().splitlines()})
                assert len(topics) == 20
                page.get_by_label("Topic ids").fill(" ".join(topics))
                with page.expect_navigation():
                    page.get_by_role("button", name="Register the topics").click()
                assert "Topics saved: 20 new, 0 updated, 0 unchanged." in page.inner_text("#notice")
                for topic, title in TITLES.items():
                    page.get_by_label("Topic id", exact=True).fill(topic)
                    page.get_by_label("Title", exact=True).fill(title)
                    page.get_by_label("Description", exact=True).fill(f"Documents about {title.lower()} are relevant.")
                    with page.expect_navigation():
                        page.get_by_role("button", name="Save the topic").click()
                    assert "Topics saved: 0 new, 1 updated, 0 unchanged." in page.inner_text("#notice")
                assert page.locator("#topics tbody tr").count() == 20
                assert TITLES["0002"] in page.inner_text('#topics tr[data-topic="0002"]')
                shot(page, "walkthrough-05-topics")

            with walk.step("Hand the collection to an organiser", "/tokens", "organiser", "Collection ids",
                           "Create the token", "Sign out"):
                page.get_by_role("link", name="Tokens").click()
                page.wait_for_url(f"{base}/tokens")
                form = page.locator("#new-token-form")
                form.get_by_label("Role").select_option("organiser")
                form.get_by_label("Name").fill("track organiser")
                form.get_by_label("Collection ids (organisers, assessors; participants: the only ones it reaches)").fill(str(cid))
                with page.expect_navigation():
                    form.get_by_role("button", name="Create the token").click()
                organiser = new_token(page)
                shot(page, "walkthrough-06-organiser-token")
                with page.expect_navigation():
                    page.get_by_role("button", name="Sign out").click()
                sign_in(page, base, organiser)
                assert "Signed in as track organiser (organiser)" in page.inner_text("header")
                assert page.locator(f'#collections tr[data-collection="{COLLECTION}"]').count() == 1

            with walk.step("Create and enrol the teams", "/c/{cid}/teams", "New team's name", "Create and enrol",
                           *TEAMS):
                page.get_by_role("link", name=COLLECTION).click()
                nav(page, "Teams")
                page.wait_for_url(f"{base}/c/{cid}/teams")
                for team in TEAMS:
                    page.get_by_label("New team's name").fill(team)
                    with page.expect_navigation():
                        page.get_by_role("button", name="Create and enrol").click()
                    assert page.inner_text("#notice").startswith(f"Team {team} is created and enrolled")
                teams = page.locator("#teams tbody tr").evaluate_all("rows => rows.map(r => r.dataset.team)")
                assert sorted(teams) == sorted(TEAMS), teams
                shot(page, "walkthrough-07-teams")

            tokens: dict[str, str] = {}
            with walk.step("Give each team a participant token", "Holder's name", "Create a token", "shown once"):
                for team in PARTICIPANTS:
                    row = page.locator(f'#teams tr[data-team="{team}"]')
                    row.get_by_label("Holder's name").fill(f"{team}-1")
                    with page.expect_navigation():
                        row.get_by_role("button", name=f"Create a token for team {team}").click()
                    tokens[team] = new_token(page)
                shot(page, "walkthrough-08-participant-token")
                page.goto(f"{base}/c/{cid}/teams")
                assert page.locator("#new-token").count() == 0  # shown once

            with walk.step("Upload the qrels", "/c/{cid}/qrels", "samples/ntcir-like/qrels.ntcir", "Qrels file",
                           "Preview the change", "Store as the next version and re-evaluate"):
                nav(page, "Qrels")
                page.wait_for_url(f"{base}/c/{cid}/qrels")
                page.get_by_label("Qrels file").set_input_files(str(SAMPLE / "qrels.ntcir"))
                with page.expect_navigation():
                    page.get_by_role("button", name="Preview the change").click()
                judgments = len((SAMPLE / "qrels.ntcir").read_text().splitlines())
                totals = page.inner_text("#preview-totals")
                assert totals.startswith(f"{judgments} added, 0 removed, 0 changed judgments"), totals
                assert page.locator("#preview-topics tbody tr").count() == 20
                shot(page, "walkthrough-09-qrels-preview")
                with page.expect_navigation():
                    page.get_by_role("button", name="Store as the next version and re-evaluate").click()
                assert re.search(r"/qrels\?uploaded=1$", page.url), page.url
                assert "Qrels version 1 stored" in page.inner_text("main")
                assert page.locator("#versions > tbody > tr").count() == 1  # (each row folds a per-topic table)

            with walk.step("Participants submit their runs", "/c/{cid}/submit", "Run file", "Upload and evaluate",
                           "cranfield remote login", "cranfield remote submit", "--team baselines",
                           "missing_topics", "short_lists", "ties_at_cutoff", "[topics: 0007, 0017, 0020]", *runs):
                # alpha: RUN-01 in the portal, as its primary run
                with browsing(browser, "walkthrough-alpha") as alpha:
                    sign_in(alpha, base, tokens["alpha"])
                    alpha.get_by_role("link", name=COLLECTION).click()
                    nav(alpha, "Submit a run")
                    alpha.wait_for_url(f"{base}/c/{cid}/submit")
                    alpha.get_by_label("Run file").set_input_files(str(runs["RUN-01"]))
                    alpha.get_by_label("Run type").select_option("automatic")
                    alpha.get_by_label("Description (optional)").fill("BM25 with RM3 query expansion")
                    alpha.get_by_label("This is a primary run of the team").check()
                    shot(alpha, "walkthrough-10-submit")
                    with alpha.expect_navigation():
                        alpha.get_by_role("button", name="Upload and evaluate").click()
                    assert re.search(r"/c/\d+/runs\?submitted=\d+$", alpha.url), alpha.url
                    run_01 = int(alpha.url.rsplit("=", 1)[1])
                    warned = alpha.locator("#run-warnings li").evaluate_all("li => li.map(i => i.dataset.warning)")
                    assert warned == ["missing_topics", "short_lists", "ties_at_cutoff"], warned
                    assert "Topics: 0001, 0018." in alpha.inner_text('#run-warnings [data-warning="missing_topics"]')
                    shot(alpha, "walkthrough-10-submitted-with-a-warning")

                # the others with the client, each from its own machine (config folder)
                for who, token in [*((team, tokens[team]) for team in PARTICIPANTS), ("organiser", organiser)]:
                    cranfield(tmp, "remote", "login", base, "--token", token, config=who)
                ids: dict[str, int] = {}
                for team, tags in TEAMS.items():
                    for tag in tags:
                        if tag == "RUN-01":
                            continue
                        extra = ["--team", "baselines"] if team == "baselines" else []
                        who = "organiser" if team == "baselines" else team
                        done = cranfield(tmp, "remote", "submit", COLLECTION, str(runs[tag]), "--type", "automatic",
                                         "--description", f"{tag} of team {team}",
                                         *(["--primary"] if tag in ("RUN-03", "RUN-05") else []), *extra, config=who)
                        first = done.stdout.splitlines()[0]
                        assert re.match(rf"run \d+ stored: tag {tag}, team {team}, collection {COLLECTION}$", first), \
                            done.stdout
                        assert "warning (missing_topics)" in done.stdout, done.stdout
                        assert tag != "RUN-03" or "[topics: 0007, 0017, 0020]" in done.stdout, done.stdout
                        ids[tag] = int(first.split()[1])
                        assert tag != "RUN-03" or done.stdout.splitlines()[1] == "job 4 evaluates it", done.stdout
                # the doc's order (the table's) gives each run its number as id, which the doc uses
                assert {"RUN-01": run_01, **ids} == {tag: int(tag[-2:]) for tag in runs}, ids

            with walk.step("Watch the evaluation", "/c/{cid}/runs", "cranfield remote wait --run 7", "remote wait 9",
                           "cranfield remote runs", "Latest job", "cranfield remote board ntcir-like"):
                waited = cranfield(tmp, "remote", "wait", "--run", str(ids["RUN-07"]), "--timeout", "120",
                                   config="gamma")
                assert waited.stdout.strip() == f"run {ids['RUN-07']} (RUN-07): evaluated", waited.stdout
                listed = cranfield(tmp, "remote", "runs", COLLECTION, config="gamma").stdout
                assert {line.split("\t")[2] for line in listed.splitlines()[1:]} == set(TEAMS["gamma"]), listed
                before = cranfield(tmp, "remote", "board", COLLECTION, config="gamma").stdout.splitlines()
                column = before[0].split("\t").index("run")
                assert sorted(line.split("\t")[column] for line in before[1:]) == TEAMS["gamma"], before  # secret
                nav(page, "All runs")
                page.wait_for_url(f"{base}/c/{cid}/runs")
                for tag in runs:  # the table refreshes itself until every run is evaluated and ranked
                    row = page.locator(f'#runs tr[data-run="{tag}"]')
                    row.locator("[data-run-status]", has_text="evaluated").wait_for(timeout=60_000)
                wait_for(lambda: _tested(base, cid, organiser, len(runs)), 90, "the evaluation and its tests")
                nav(page, "Console")
                page.wait_for_url(f"{base}/c/{cid}/console")
                latest = page.inner_text("#latest-job")
                assert latest.startswith("9 (submission): done"), latest
                shot(page, "walkthrough-11-evaluated")

            with walk.step("Mark the baselines", "/c/{cid}/console/runs", "Mark RUN-08 as a baseline"):
                console_nav(page, "Runs")
                page.wait_for_url(f"{base}/c/{cid}/console/runs")
                with page.expect_navigation():
                    page.get_by_role("button", name="Mark RUN-08 as a baseline").click()
                assert page.inner_text("#notice").startswith("Run RUN-08 is marked as a baseline")
                assert page.get_by_role("button", name="Unmark RUN-08 as a baseline").count() == 1
                shot(page, "walkthrough-12-baseline")

            with walk.step("Release the board", "/c/{cid}/console", "Release the board"):
                console_nav(page, "Overview")
                page.wait_for_url(f"{base}/c/{cid}/console")
                assert page.inner_text("#board-state") == "not released"
                with page.expect_navigation():
                    page.get_by_role("button", name="Release the board").click()
                assert page.inner_text("#board-state") == "released"
                shot(page, "walkthrough-13-released")

            with walk.step("Read the board and its significance", "/c/{cid}/significance", "Group",
                           "Significantly better than", "baseline", "All metrics"):
                nav(page, "Leaderboard")
                page.wait_for_url(f"{base}/c/{cid}")
                order = board_order(page)
                assert sorted(order) == sorted(runs), order
                assert "bootstrap" in page.inner_text("#group-letters")
                groups = board_column(page, "Group")
                assert all(g.strip() for g in groups), groups
                assert page.locator('#leaderboard tr[data-run="RUN-08"] .badge.baseline').count() == 1
                means = [float(t) for t in board_column(page, "nDCG@10")]
                assert means == sorted(means, reverse=True), means
                topics_scored = board_column(page, "Topics")
                assert set(topics_scored) == {"19"}, topics_scored  # topic 0020 has no relevant document
                shot(page, "walkthrough-14-board")
                nav(page, "Significance")
                page.wait_for_url(f"{base}/c/{cid}/significance")
                assert page.locator("svg[role=img]").count() == 1 and page.locator("#p-matrix tbody tr").count() == 8
                shot(page, "walkthrough-14-significance")
                nav(page, "All metrics")
                page.wait_for_url(re.compile(rf".*/c/{cid}/metrics.*"))
                shot(page, "walkthrough-14-all-metrics")

            with walk.step("Freeze a snapshot", "Freeze a snapshot", "official results", "/snapshots/"):
                nav(page, "Leaderboard")
                page.wait_for_url(f"{base}/c/{cid}")
                page.get_by_label("Label").fill("official results")
                with page.expect_navigation():
                    page.get_by_role("button", name="Freeze a snapshot").click()
                assert re.search(r"/snapshots/\d+\?notice=snapshot-frozen", page.url), page.url
                assert "official results" in page.inner_text("main")
                assert page.inner_text("#notice").startswith("Snapshot frozen: the board on every metric")
                shot(page, "walkthrough-15-snapshot")

        with walk.step("Check what participants see", "cranfield remote board",
                       "cranfield remote scores RUN-03 --format trec", "runid all RUN-03", "cranfield remote scores 1",
                       "HTTP 403", "participating.md"):
            with browsing(browser, "walkthrough-beta") as beta:
                sign_in(beta, base, tokens["beta"])
                beta.get_by_role("link", name=COLLECTION).click()
                beta.wait_for_url(f"{base}/c/{cid}")
                assert board_order(beta) == order  # every team's rows, ranked by the official metric
                assert set(board_column(beta, "Team")) == set(TEAMS)
                assert all(board_column(beta, "Group"))
                assert "(official)" in beta.locator("#metric option[selected]").inner_text()
                shot(beta, "walkthrough-16-participant-board")
                nav(beta, "Significance")
                beta.wait_for_url(f"{base}/c/{cid}/significance")
                assert beta.locator("#p-matrix tbody tr").count() == 8
            printed = cranfield(tmp, "remote", "board", COLLECTION, config="beta").stdout.splitlines()
            header = printed[0].split("\t")
            assert [line.split("\t")[header.index("run")] for line in printed[1:]] == order, printed
            scores = cranfield(tmp, "remote", "scores", "RUN-03", "--format", "trec", config="beta").stdout
            assert scores.splitlines()[0] == "runid\tall\tRUN-03", scores  # the run the doc names, named
            assert "nDCG@10\tall\t" in scores and "\t0020\t" not in scores and "AP\t0007\t0.0000" in scores, scores
            assert _trec_scores(scores) == _api_scores(base, ids["RUN-03"], tokens["beta"], METRICS)  # RUN-03's
            shared = cranfield(tmp, "remote", "scores", "1", config="beta", check=False)  # the doc's id of RUN-01
            assert shared.returncode == 0 and shared.stdout.startswith("runid\tall\tRUN-01\n"), shared.stderr
            assert _trec_scores(shared.stdout) == _api_scores(base, run_01, tokens["beta"], METRICS)  # released
            refused = httpx.get(f"{base}/api/runs/{run_01}/file", headers={"Authorization": f"Bearer {tokens['beta']}"})
            assert refused.status_code == 403, refused.text  # the run file stays alpha's and the organisers'
    finally:
        stop(server)
    assert walk.ran == STEPS == doc_steps()
