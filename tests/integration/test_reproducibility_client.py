"""A reproducibility track through `cranfield remote` against a running `cranfield serve` (issue 28):
the organiser registers an original pair (two runs of the `board` collection); team alpha submits
its reproductions to `task` with `--reproduces` and `--reproduces-pair`; the served worker
evaluates them and measures the reproduction (reproducibility on another collection); `remote
repro-board` prints the board in three formats, as the API gives it, and a team sees its own
reproductions only until the release."""

from __future__ import annotations

import csv
import io
import json

from tests.integration.conftest import wait_for
from tests.integration.test_remote_client import Service, _write, remote, svc  # noqa: F401  (the fixture)


def test_submit_with_reproduces_and_read_the_repro_board(svc: Service) -> None:  # noqa: F811
    org, alpha = svc.tokens["organiser"], svc.tokens["alpha"]
    b, a = sorted(svc.board_runs.values())[:2]
    with svc.api(org) as c:
        r = c.post(f"/api/collections/{svc.task}/reproduction-originals", json={"run": b, "advanced_run": a,
                                                                              "label": "the paper"})
        assert r.status_code == 201, r.text
    (_, text_b), (_, text_a) = svc.runs.popitem(), svc.runs.popitem()
    done = remote(svc, "submit", "task", str(_write(svc, "rep-b.run", text_b)), "--reproduces", str(b), token=alpha)
    assert done.returncode == 0, done.stderr
    rid_b = int(done.stdout.splitlines()[0].split()[1])
    assert f"declared: the run reproduces run {b}" in done.stdout  # words for people (issue 37, item 5)
    done = remote(svc, "submit", "task", str(_write(svc, "rep-a.run", text_a)), "--reproduces", str(a),
                  "--reproduces-pair", str(rid_b), str(b), token=alpha)
    assert done.returncode == 0, done.stderr
    pair_id = int(next(ln for ln in done.stdout.splitlines() if ln.startswith("reproduction ")).split()[1])
    # a pair alone needs its original: refused by the client before anything is sent
    refused = remote(svc, "submit", "task", str(_write(svc, "x.run", text_a)), "--reproduces-pair", str(rid_b),
                     str(b), token=alpha)
    assert refused.returncode != 0 and "--reproduces" in refused.stderr

    def measured() -> dict | None:  # type: ignore[type-arg]
        with svc.api(org) as c:
            doc = c.get(f"/api/collections/{svc.task}/reproducibility").json()
        rows = [r for r in doc["rows"] if r["id"] == pair_id]
        return doc if rows and rows[0]["effect"] is not None and not doc["stale"] else None

    api = wait_for(measured, 120, "the reproduction's measures")
    row = next(r for r in api["rows"] if r["id"] == pair_id)
    assert row["kind"] == "pair" and not row["same_collection"] and row["baseline"]["test"] == "Student t"

    tsv = remote(svc, "repro-board", "task", token=org)
    assert tsv.returncode == 0, tsv.stderr
    lines = [ln.split("\t") for ln in tsv.stdout.splitlines()]
    assert lines[0] == ["id", "team", "runs", "original", "collection", "verdict"]
    mine = next(ln for ln in lines[1:] if ln[0] == str(pair_id))
    assert mine[1] == "alpha" and mine[4] == "other" and mine[5] == row["verdict"]
    as_csv = remote(svc, "repro-board", "task", "--format", "csv", token=org)
    with svc.api(org) as c:
        served = c.get(f"/api/collections/{svc.task}/reproducibility?format=csv").text
        assert as_csv.stdout == served.replace("\r\n", "\n")  # (the CSV's CRLF, read back as text: LF)
    parsed = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert float(next(p for p in parsed if p["reproduction"] == str(pair_id))["ER"]) == row["effect"]["ER"]
    as_json = json.loads(remote(svc, "repro-board", "task", "--format", "json", token=org).stdout)
    assert as_json["rows"] == api["rows"]
    # beta sees no reproduction of alpha's before the release
    beta = remote(svc, "repro-board", "task", token=svc.tokens["beta"])
    assert beta.returncode == 0 and beta.stdout.splitlines() == ["id\tteam\truns\toriginal\tcollection\tverdict"]
