"""Judgment sets (issue 16): several named sets per collection with provenance, evaluated by
the same workers; the board keeps ranking by the official set; another set can become the
official one; several assessors' labels derived by a rule; comparisons by set name; who may
see and do what."""

from __future__ import annotations

import collections
import io
import json
import random

import pytest

from tests.integration.conftest import World, auth


def _relabelled(qrels: str, seed: int, share: float = 0.3) -> str:
    rng = random.Random(seed)
    out = []
    for line in qrels.splitlines():
        parts = line.split()
        if parts and rng.random() < share and int(parts[-1].lstrip("L")) >= 0:
            level = rng.choice([0, 1, 2, 3])
            parts[-1] = f"L{level}" if parts[-1].startswith("L") else str(level)
        out.append(" ".join(parts))
    return "\n".join(out) + "\n"


def _board(world: World, token: str, **params: object) -> dict:
    r = world.client.get(f"/api/collections/{world.cid}/leaderboard", params=params, headers=auth(token))
    assert r.status_code == 200, r.text
    return r.json()


def _rows(board: dict) -> dict[str, float]:
    return {row["run"]: row["mean"] for row in board["rows"]}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_a_second_set_is_evaluated_beside_the_official_one_and_can_become_it(world: World) -> None:
    org = auth(world.tokens["organiser"])
    c = world.client
    before = _board(world, world.tokens["organiser"])
    assert before["rows"] and (before["qrels_version"], before["judgment_set"]) == (1, "official")

    r = c.get(f"/api/collections/{world.cid}/judgment-sets", headers=org)
    assert r.status_code == 200, r.text
    (official,) = r.json()["items"]
    assert (official["name"], official["official"], official["current_version"]) == ("official", True, 1)
    assert official["evaluation"]["evaluated"] == official["evaluation"]["runs"] == 3

    r = c.post(f"/api/collections/{world.cid}/judgment-sets", headers=org, json={
        "name": "umbrela-gpt4o", "source": "automatic", "model": "gpt-4o-2024-08-06", "prompt": "UMBRELA v1",
        "judged_on": "2026-11-20", "notes": "zero-shot"})
    assert r.status_code == 201, r.text
    assert r.json()["current_version"] is None and r.json()["official"] is False
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", headers=org,
                  json={"name": "umbrela-gpt4o"}).status_code == 409
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", headers=org,
                  json={"name": "7up"}).status_code in (400, 422)  # a number-like name is refused

    automatic = _relabelled(world.qrels, seed=3)
    r = c.post(f"/api/collections/{world.cid}/qrels", params={"judgment_set": "umbrela-gpt4o"}, content=automatic,
               headers=org)
    assert r.status_code == 201, r.text
    assert (r.json()["version"], r.json()["judgment_set"]) == (2, "umbrela-gpt4o")
    assert r.json()["job"] is not None

    # The board still ranks by the official set; the other set's scores are stored and named.
    after = _board(world, world.tokens["organiser"])
    assert _rows(after) == _rows(before) and after["qrels_version"] == 1
    other = _board(world, world.tokens["organiser"], qrels_version=2)
    assert other["judgment_set"] == "umbrela-gpt4o"
    r = world.client.get(f"/api/collections/{world.cid}/leaderboard", params={"qrels_version": 2},
                         headers=auth(world.tokens["alpha"]))
    assert r.status_code == 404  # another set's board: organisers only
    assert set(_rows(other)) == set(_rows(before)) and _rows(other) != _rows(before)
    versions = c.get(f"/api/collections/{world.cid}/qrels", headers=org).json()
    assert versions["current"] == 1
    assert [(v["version"], v["judgment_set"]) for v in versions["items"]] == [(1, "official"), (2, "umbrela-gpt4o")]
    detail = c.get(f"/api/collections/{world.cid}/judgment-sets/umbrela-gpt4o", headers=org).json()
    assert (detail["model"], detail["prompt"], detail["judged_on"]) == ("gpt-4o-2024-08-06", "UMBRELA v1",
                                                                         "2026-11-20")
    assert [v["version"] for v in detail["versions"]] == [2]
    assert detail["evaluation"]["evaluated"] == 3

    # A comparison by set names is the comparison of their versions.
    by_name = c.get(f"/api/collections/{world.cid}/judgment-sets/compare",
                    params={"a": "official", "b": "umbrela-gpt4o"}, headers=org)
    by_number = c.get(f"/api/collections/{world.cid}/qrels/compare", params={"a": 1, "b": 2}, headers=org)
    assert by_name.status_code == by_number.status_code == 200, by_name.text
    assert by_name.json() == by_number.json()
    assert by_name.json()["b"]["judgment_set"] == "umbrela-gpt4o"
    assert c.get(f"/api/collections/{world.cid}/judgment-sets/compare", params={"a": "official:2", "b": "1"},
                 headers=org).status_code == 404  # version 2 is not the official set's

    # The CLI reads the same use cases.
    from service.cli import build_parser
    from service.cli.registry import handler_for

    outputs = {}
    for key, argv in (("compare", ["judges", "compare", "--collection", "task", "--from", "official", "--to",
                                   "umbrela-gpt4o", "--format", "json"]),
                      ("sets", ["judges", "sets", "--collection", "task"])):
        buf = io.StringIO()
        args = build_parser().parse_args(argv)
        assert handler_for(args.command)(args, buf) == 0
        outputs[key] = buf.getvalue()
    assert json.loads(outputs["compare"]) == by_name.json()
    listed_lines = outputs["sets"].splitlines()
    # a text view for people: yes/no, no "None" for a set without a model, "n of m" runs evaluated
    assert listed_lines[1].startswith("official\tyes\thuman\t\t") and listed_lines[2].startswith(
        "umbrela-gpt4o\tno\tautomatic\tgpt-4o-2024-08-06\t2\t")
    assert "None" not in outputs["sets"] and all(" of " in line.split("\t")[7] for line in listed_lines[1:])

    # Made official, the set ranks the board (its results were complete already); the
    # official set's earlier results are kept and readable by version.
    r = c.post(f"/api/collections/{world.cid}/judgment-sets/umbrela-gpt4o/official", json={}, headers=org)
    assert r.status_code == 200, r.text
    assert (r.json()["official"], r.json()["previous"], r.json()["changed"]) == ("umbrela-gpt4o", "official", True)
    now = _board(world, world.tokens["organiser"])
    assert _rows(now) == _rows(other) and (now["qrels_version"], now["judgment_set"]) == (2, "umbrela-gpt4o")
    assert _rows(_board(world, world.tokens["organiser"], qrels_version=1)) == _rows(before)
    listed = {s["name"]: s["official"] for s in c.get(f"/api/collections/{world.cid}/judgment-sets",
                                                       headers=org).json()["items"]}
    assert listed == {"official": False, "umbrela-gpt4o": True}
    audit = c.get(f"/api/collections/{world.cid}/audit", headers=org).json()["items"]
    assert any(e["action"] == "judgment_set.official" for e in audit)


def test_a_set_evaluated_on_request_only(world: World) -> None:
    org = auth(world.tokens["organiser"])
    c = world.client
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", headers=org,
                  json={"name": "post-edited", "source": "merge", "auto_evaluate": False}).status_code == 201
    assert c.post(f"/api/collections/{world.cid}/judgment-sets/post-edited/evaluate", json={},
                  headers=org).status_code == 409  # nothing to evaluate yet
    r = c.post(f"/api/collections/{world.cid}/qrels", params={"judgment_set": "post-edited"},
               content=_relabelled(world.qrels, seed=5), headers=org)
    assert r.status_code == 201 and r.json()["job"] is None, r.text
    detail = c.get(f"/api/collections/{world.cid}/judgment-sets/post-edited", headers=org).json()
    assert detail["evaluation"]["evaluated"] == 0
    # Another set's job in progress is not the board's re-evaluation.
    from sqlalchemy import select

    from service.store.db import transaction
    from service.store.models import Collection, Job, QrelsVersion

    with transaction(world.factory) as s:
        coll = s.get(Collection, world.cid)
        version = s.scalar(select(QrelsVersion).where(QrelsVersion.collection_id == world.cid,
                                                      QrelsVersion.version == 2))
        s.add(Job(collection_id=world.cid, kind="judgments", qrels_version_id=version.id,
                  config_id=coll.current_config_id, evaluator_version="test", status="running", total=0))
    assert _board(world, world.tokens["organiser"])["reevaluation_in_progress"] is False
    with transaction(world.factory) as s:
        s.query(Job).filter(Job.evaluator_version == "test").delete()
    assert c.get(f"/api/collections/{world.cid}/judgment-sets/compare", params={"a": "official", "b": "post-edited"},
                 headers=org).status_code == 409  # no results to compare yet
    r = c.post(f"/api/collections/{world.cid}/judgment-sets/post-edited/evaluate", json={}, headers=org)
    assert r.status_code == 202, r.text
    assert (r.json()["version"], r.json()["total"]) == (2, 3)
    detail = c.get(f"/api/collections/{world.cid}/judgment-sets/post-edited", headers=org).json()
    assert detail["evaluation"]["evaluated"] == 3 and detail["evaluation"]["job_status"] == "done"
    again = c.post(f"/api/collections/{world.cid}/judgment-sets/post-edited/evaluate", json={}, headers=org)
    assert again.status_code == 202 and again.json()["total"] == 0  # nothing evaluated twice

    # An automatically evaluated set's second version: its job compares it with the first, but
    # the board's rank-change report stays the official qrels' (none: they never changed).
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", headers=org, json={"name": "second"}).status_code == 201
    for seed in (6, 7):
        r = c.post(f"/api/collections/{world.cid}/qrels", params={"judgment_set": "second"},
                   content=_relabelled(world.qrels, seed=seed), headers=org)
        assert r.status_code == 201 and r.json()["job"] is not None, r.text
    from service.evaluation.permissions.access import Principal
    from service.evaluation.publishing.boards import rank_change_report
    from service.store.models import Collection, Job

    with world.factory() as s:
        assert s.query(Job).filter(Job.previous_qrels_id.is_not(None), Job.status == "done").count() == 1
        assert rank_change_report(s, s.get(Collection, world.cid), Principal(role="admin", name="t")) is None


def test_only_a_completely_evaluated_set_becomes_official(world: World) -> None:
    org = auth(world.tokens["organiser"])
    c = world.client
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", headers=org,
                  json={"name": "late", "auto_evaluate": False}).status_code == 201
    assert c.post(f"/api/collections/{world.cid}/qrels", params={"judgment_set": "late"},
                  content=_relabelled(world.qrels, seed=9), headers=org).status_code == 201
    before = _board(world, world.tokens["organiser"])
    r = c.post(f"/api/collections/{world.cid}/judgment-sets/late/official", json={}, headers=org)
    assert r.status_code == 409 and "0 of 3 runs" in r.text, r.text
    assert _rows(_board(world, world.tokens["organiser"])) == _rows(before)  # nothing moved
    assert c.post(f"/api/collections/{world.cid}/judgment-sets/late/evaluate", json={}, headers=org).status_code == 202
    r = c.post(f"/api/collections/{world.cid}/judgment-sets/late/official", json={"reason": "adjudicated"},
               headers=org)
    assert r.status_code == 200 and r.json()["changed"] is True, r.text
    assert _board(world, world.tokens["organiser"])["judgment_set"] == "late"


def _labels_file(qrels: str, seed: int) -> tuple[str, dict[tuple[str, str], list[int]]]:
    """Three assessors' labels of the first 40 judged documents (each labels most of them)."""
    rng = random.Random(seed)
    lines, by_doc = [], {}
    docs = [(p[0], p[-2]) for p in (ln.split() for ln in qrels.splitlines()) if p][:40]
    for assessor in ("alice", "bob", "carol"):
        for topic, docno in docs:
            if rng.random() < 0.8:
                level = rng.choice([0, 1, 2, 3])
                lines.append(f"{topic} {docno} {assessor} L{level}")
                by_doc.setdefault((topic, docno), []).append(level)
    return "\n".join(lines) + "\n", by_doc


def _majority(levels: list[int]) -> int:
    counts = collections.Counter(levels)
    top = max(counts.values())
    return min(level for level, n in counts.items() if n == top)  # ties: the lower level


def _judgments(world: World, version: int) -> dict[tuple[str, str], int]:
    from sqlalchemy import select

    from service.store.models import Judgment, QrelsVersion

    with world.factory() as s:
        vid = s.scalar(select(QrelsVersion.id).where(QrelsVersion.collection_id == world.cid,
                                                     QrelsVersion.version == version))
        return {(t, d): lv for t, d, lv in s.execute(select(Judgment.topic, Judgment.docno, Judgment.level)
                                                     .where(Judgment.qrels_version_id == vid))}


def test_labels_of_several_assessors_are_kept_and_derived_by_the_sets_rule(world: World) -> None:
    org = auth(world.tokens["organiser"])
    c = world.client
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", headers=org,
                  json={"name": "crowd", "rule": "majority"}).status_code == 201
    text, by_doc = _labels_file(world.qrels, seed=11)
    bad = text + "0001 not-a-level alice Lx\n"
    r = c.post(f"/api/collections/{world.cid}/judgment-sets/crowd/labels", content=bad, headers=org)
    assert r.status_code == 422 and "line" in r.text, r.text
    assert c.get(f"/api/collections/{world.cid}/judgment-sets/crowd", headers=org).json()["labels"] == 0

    r = c.post(f"/api/collections/{world.cid}/judgment-sets/crowd/labels", content=text, headers=org)
    assert r.status_code == 201, r.text
    doc = r.json()
    assert (doc["rule"], sorted(doc["assessors"]), doc["documents"]) == ("majority", ["alice", "bob", "carol"],
                                                                         len(by_doc))
    assert _judgments(world, doc["version"]) == {k: _majority(v) for k, v in by_doc.items()}

    r = c.patch(f"/api/collections/{world.cid}/judgment-sets/crowd", json={"rule": "max"}, headers=org)
    assert r.status_code == 200, r.text
    assert _judgments(world, r.json()["new_version"]) == {k: max(v) for k, v in by_doc.items()}

    # One assessor's labels against the set: label figures only.
    r = c.get(f"/api/collections/{world.cid}/judgment-sets/compare", params={"a": "crowd", "b": "alice@crowd"},
              headers=org)
    assert r.status_code == 200, r.text
    cmp = r.json()
    alice = {k: v for k, v in _alice(text).items()}
    assert cmp["b"]["assessor"] == "alice" and cmp["b"]["judgments"] == len(alice)
    assert cmp["labels"]["overlap"]["both"] == len(alice) and cmp["ranking"] is None
    higher = sum(1 for k, lv in alice.items() if max(by_doc[k]) < lv)
    assert higher == 0 and cmp["labels"]["overall"]["higher"] == 0  # nobody labels above the maximum
    assert c.get(f"/api/collections/{world.cid}/judgment-sets/compare", params={"a": "crowd", "b": "zoe@crowd"},
                 headers=org).status_code == 404


def _alice(text: str) -> dict[tuple[str, str], int]:
    out = {}
    for line in text.splitlines():
        topic, docno, assessor, level = line.split()
        if assessor == "alice":
            out[(topic, docno)] = int(level.lstrip("L"))
    return out


def test_who_may_see_and_change_judgment_sets(world: World) -> None:
    c = world.client
    org = auth(world.tokens["organiser"])
    base = f"/api/collections/{world.cid}/judgment-sets"
    assert c.post(base, headers=org, json={"name": "llm"}).status_code == 201
    for role in ("alpha", "assessor", "other_organiser", None):
        token = world.tokens.get(role) if role else None
        h = auth(token)
        assert c.get(f"{base}/official", headers=h).status_code == (401 if role is None else 403), role
        assert c.post(base, headers=h, json={"name": f"x{role}"}).status_code in (401, 403, 404), role
        assert c.post(f"{base}/llm/evaluate", json={}, headers=h).status_code in (401, 403, 404), role
        assert c.post(f"{base}/official/official", json={}, headers=h).status_code in (401, 403, 404), role
        assert c.post(f"/api/collections/{world.cid}/qrels", params={"judgment_set": "llm"}, content=world.qrels,
                      headers=h).status_code in (401, 403, 404), role
        assert c.get(f"{base}/compare", params={"a": "official", "b": "llm"}, headers=h).status_code in (401, 403,
                                                                                                          404), role
    # A participant lists no set of the organisers'.
    r = c.get(base, headers=auth(world.tokens["alpha"]))
    assert r.status_code == 200 and r.json()["items"] == []
