"""Who may see or do what: every access rule of Cranfield, as named predicates.

Each predicate takes the caller (:class:`~service.evaluation.permissions.access.Principal`) and the
resource (a collection, run, pool, snapshot...) and answers True or False; it reads nothing
from the database. The use cases, the JSON API, the portal's routes and the portal's
navigation all ask these functions, so one rule has one definition. ``require`` turns a
False into the error the caller should see: 401 without credentials, 403 with them.

Roles: ``admin`` (everything), ``organiser`` of some collections (everything about those),
``participant`` (a member of a team: takes part in the collections its team is enrolled in,
sees its own runs and scores, other teams' scores once the board is released), ``assessor``
(judges the pool topics assigned to it and sees nothing else, so judging stays blind), and
anonymous callers (public collections' released boards only). Qrels are never shown to
anyone but the collection's organisers.

Collection states the rules depend on: visibility (public/private), enrolment (invite/open),
the board released or not, a public/private topic split revealed or not, and the submission
window open or closed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service.errors import Forbidden, Unauthenticated
from service.store.db import as_utc

if TYPE_CHECKING:
    from service.evaluation.permissions.access import Principal
    from service.store.models import Collection, JudgmentSet, LeaderboardSnapshot, Pool, Run


# ------------------------------------------------------------------------------ helpers
def require(allowed: bool, me: Principal, what: str) -> None:
    """Raise unless ``allowed``: 401 for an anonymous caller, 403 for a signed-in one."""
    if allowed:
        return
    if me.role is None:
        raise Unauthenticated(f"{what} needs a bearer token")
    raise Forbidden(f"{what} is not allowed for this token")


def is_admin(me: Principal) -> bool:
    return me.role == "admin"


def is_signed_in(me: Principal) -> bool:
    return me.role is not None


# ---------------------------------------------------------------------- collections
def may_organise(me: Principal, collection_id: int) -> bool:
    """Admins organise everything; organisers the collections their token names."""
    return is_admin(me) or (me.role == "organiser" and collection_id in me.organises)


def within_reach(me: Principal, collection_id: int) -> bool:
    """A scoped participant token acts only in its scope (``Principal.reach``; its ``enrolled``
    is within it already): a token an organiser made never reaches further than that organiser
    does, whatever its team is enrolled in (:func:`may_create_token`)."""
    return me.reach is None or collection_id in me.reach


def is_enrolled(me: Principal, coll: Collection) -> bool:
    """A participant whose team is enrolled in the collection."""
    return me.role == "participant" and coll.id in me.enrolled


def may_read_collection(me: Principal, coll: Collection) -> bool:
    """Listing and reading a collection: its organisers, its enrolled teams, and anyone but
    assessors when it is public. A private collection is invisible to everyone else."""
    if me.role == "assessor":
        return False  # blind judging: assessors reach only their pools (may_assess)
    return may_organise(me, coll.id) or is_enrolled(me, coll) or coll.visibility == "public"


def may_create_collection(me: Principal) -> bool:
    return is_admin(me)


def may_configure(me: Principal, coll: Collection) -> bool:
    """Settings, release, topic reveal, topics, baselines, re-evaluation."""
    return may_organise(me, coll.id)


def may_manage_teams(me: Principal, coll: Collection) -> bool:
    """Enrol and remove teams, list the enrolled teams."""
    return may_organise(me, coll.id)


def may_read_topics(me: Principal, coll: Collection) -> bool:
    """The collection's topics and their texts: whoever reads the collection, and its
    assessors (their assigned topics only: :func:`may_see_topic_text`)."""
    return may_read_collection(me, coll) or any(c == coll.id for c, _ in me.assigned)


def may_see_topic_text(me: Principal, coll: Collection, topic: str) -> bool:
    """One topic's title and description. Assessors: their assigned topics (hidden or not:
    they judge them). Under an unrevealed public/private split the hidden topics' texts are
    withheld from everyone but the organisers, as their figures are."""
    if me.role == "assessor":
        return (coll.id, topic) in me.assigned
    if not may_read_collection(me, coll):
        return False
    return not (topic in hidden_topics(coll) and sees_visible_topics_only(me, coll))


def may_see_audit(me: Principal, coll: Collection) -> bool:
    """The collection's audit log (who did what, when): its organisers."""
    return may_organise(me, coll.id)


def may_enrol_self(me: Principal, coll: Collection) -> bool:
    """A participant enrols its own team in a public collection whose enrolment is open (a
    private collection's teams are enrolled by its organisers: ids are no secret)."""
    return (me.role == "participant" and me.team_id is not None and coll.enrolment == "open"
            and coll.visibility == "public")


def enrolling(coll: Collection) -> str:
    """A team enrolling itself in ``coll``, and why it may not when it may not."""
    if coll.enrolment != "open":
        return f"enrolling in collection {coll.id} (its enrolment is {coll.enrolment}: organisers enrol teams)"
    if coll.visibility != "public":
        return f"enrolling in collection {coll.id} (it is private: its organisers enrol teams)"
    return f"enrolling in collection {coll.id}"


def may_submit(me: Principal, coll: Collection) -> bool:
    """Enrolled participants (window and quota apply) and organisers (for any team)."""
    return is_enrolled(me, coll) or may_organise(me, coll.id)


def window_open(coll: Collection, now: datetime | None = None) -> bool:
    now = now or datetime.now(UTC)
    opens, closes = as_utc(coll.submission_opens_at), as_utc(coll.submission_closes_at)
    return not ((opens and now < opens) or (closes and now >= closes))


def hidden_topics(coll: Collection) -> frozenset[str]:
    cfg = coll.current_config
    return frozenset(cfg.evaluation.get("hidden_topics") or []) if cfg is not None else frozenset()


def sees_visible_topics_only(me: Principal, coll: Collection) -> bool:
    """Under an unrevealed public/private topic split, everyone but organisers sees figures
    over the visible topics only."""
    return bool(hidden_topics(coll)) and not coll.topics_revealed and not may_organise(me, coll.id)


# ---------------------------------------------------------------------------- boards
def may_see_board(me: Principal, coll: Collection) -> bool:
    """Organisers always; enrolled teams always (their own rows until release); others once
    the board is released and they may read the collection."""
    if not may_read_collection(me, coll):
        return False
    return may_organise(me, coll.id) or is_enrolled(me, coll) or coll.leaderboard_released


def sees_all_rows(me: Principal, coll: Collection) -> bool:
    """Every team's rows (otherwise the caller's own team's only)."""
    return may_organise(me, coll.id) or coll.leaderboard_released


def board_view(me: Principal, coll: Collection) -> tuple[bool, bool, int | None, bool] | None:
    """What makes one caller's leaderboard differ from another's: None when the caller may not
    see it, else (every team's rows, visible topics only, the own team when not every row,
    every judgment set's versions: :func:`may_read_version`). Callers with the same view are
    shown the same board, so a rendered board may be shared between them (the released board
    of a public collection is one board for everyone but its organisers)."""
    if not may_see_board(me, coll):
        return None
    every = sees_all_rows(me, coll)
    return (every, sees_visible_topics_only(me, coll), None if every else me.team_id,
            may_read_version(me, coll, official=False))


def may_see_results(me: Principal, coll: Collection) -> bool:
    """Collection-wide results beyond the board: significance matrix, per-topic medians.
    Organisers, or readers of a released board."""
    return may_read_collection(me, coll) and (may_organise(me, coll.id) or coll.leaderboard_released)


def may_see_analyses(me: Principal, coll: Collection) -> bool:
    """Meta-evaluation, rank changes, snapshots: like results, but they include hidden topics,
    so not before a topic split is revealed."""
    return may_see_results(me, coll) and not sees_visible_topics_only(me, coll)


def may_see_jobs(me: Principal, coll: Collection) -> bool:
    return may_organise(me, coll.id)


def may_follow_job(me: Principal, coll: Collection, run_teams: set[int]) -> bool:
    """One job's progress: organisers; a participant when every run of the job is its team's
    (the job of its own submission), in a collection it may still read. ``run_teams``: the
    teams of the job's runs."""
    if may_see_jobs(me, coll):
        return True
    return (me.role == "participant" and me.team_id is not None and run_teams == {me.team_id}
            and within_reach(me, coll.id) and may_read_collection(me, coll))


def may_see_qrels(me: Principal, coll: Collection) -> bool:
    """Qrels, their versions and diffs: organisers only."""
    return may_organise(me, coll.id)


def may_read_version(me: Principal, coll: Collection, official: bool) -> bool:
    """Figures read under a named qrels version (a board, the significance matrix, exports,
    comparisons): a version of the official set for whoever may see those figures (the read's
    own predicate decides that); a version of any other set (the organisers' automatic judges,
    a judges track's submissions) for those who may see the qrels only, not even the team that
    submitted it: what a team learns of its set is its judge board row."""
    return official or may_see_qrels(me, coll)


def may_upload_qrels(me: Principal, coll: Collection) -> bool:
    return may_organise(me, coll.id)


def may_freeze_board(me: Principal, coll: Collection) -> bool:
    return may_organise(me, coll.id)


def may_see_snapshot(me: Principal, coll: Collection, snap: LeaderboardSnapshot | None = None) -> bool:
    """A snapshot holds the organisers' board (all topics): as the analyses."""
    return may_see_analyses(me, coll)



# ------------------------------------------------------------------- reproducibility
def may_register_originals(me: Principal, coll: Collection) -> bool:
    """Offer runs (of this collection, or of another one the caller organises too) as
    originals to reproduce: the collection's organisers."""
    return may_organise(me, coll.id)


def may_declare_reproduction(me: Principal, run: Run, coll: Collection) -> bool:
    """Declare what a run reproduces: its enrolled team (within the submission window, checked
    by the use case) and the collection's organisers."""
    return may_organise(me, coll.id) or (owns_here(me, run, coll) and is_enrolled(me, coll))


def may_see_reproducibility(me: Principal, coll: Collection) -> bool:
    """The reproducibility board: as the leaderboard (a team its own reproductions until the
    release, organisers every one, readers of the collection once released)."""
    return may_see_board(me, coll)

# ------------------------------------------------------------------------------ runs
def owns(me: Principal, run: Run) -> bool:
    """The run is the caller's team's, in a collection its token reaches (a scoped token does
    not own its team's runs outside its scope)."""
    return (me.role == "participant" and me.team_id is not None and run.team_id == me.team_id
            and within_reach(me, run.collection_id))


def owns_here(me: Principal, run: Run, coll: Collection) -> bool:
    """The run is the caller's team's, in a collection the caller may still read (a team
    removed from a private collection loses its runs there with the rest)."""
    return owns(me, run) and may_read_collection(me, coll)


def may_see_run(me: Principal, run: Run, coll: Collection) -> bool:
    """The run's description: its team and organisers; others once the board is released."""
    if me.role == "assessor":
        return False
    return may_organise(me, coll.id) or owns_here(me, run, coll) or (
        coll.leaderboard_released and may_read_collection(me, coll))


def may_see_run_details(me: Principal, run: Run, coll: Collection) -> bool:
    """The run file, its warnings, its settings, and its per-topic scores before the release:
    its team and the organisers."""
    return may_organise(me, coll.id) or owns_here(me, run, coll)


def may_see_run_topics(me: Principal, run: Run, coll: Collection) -> bool:
    """A run's per-topic scores and comparisons of them: its team and the organisers; once the
    board is released, every reader of the collection's results, for every run they may see
    (as the run x topic matrix and the topic page show them). The run file stays its team's."""
    return may_see_run_details(me, run, coll) or (may_see_results(me, coll) and may_see_run(me, run, coll))


def may_see_run_metrics(me: Principal, run: Run, coll: Collection) -> bool:
    """The run's means over the collection's metrics: whoever may see the run (its team, the
    organisers, readers of a released board)."""
    return may_see_run(me, run, coll)


def may_see_run_curve(me: Principal, run: Run, coll: Collection) -> bool:
    """J&K curves are computed over all topics: not shown under an unrevealed split."""
    return may_see_run_metrics(me, run, coll) and not sees_visible_topics_only(me, coll)


def may_edit_run(me: Principal, run: Run, coll: Collection) -> bool:
    """Description, primary flag, judging priority."""
    return may_see_run_details(me, run, coll)


def may_mark_baseline(me: Principal, coll: Collection) -> bool:
    return may_organise(me, coll.id)


def may_delete_run(me: Principal, coll: Collection) -> bool:
    return may_organise(me, coll.id)


# ----------------------------------------------------------------------- teams, tokens
def may_create_team(me: Principal) -> bool:
    return is_admin(me) or me.role == "organiser"


def may_issue_tokens(me: Principal) -> bool:
    """Whether the caller may create tokens at all (which ones: :func:`may_create_token`)."""
    return is_admin(me) or me.role == "organiser"


def may_create_token(me: Principal, role: str | None, collections: list[int],
                     team_enrolled: frozenset[int] = frozenset()) -> bool:
    """Admins create any token. Organisers create assessor tokens for their own collections, and
    participant tokens of a team enrolled in none but their collections (``team_enrolled``: the
    team's collections), scoped to their collections (``collections`` when given, which must be
    theirs too): a token never reaches further than its creator does, so an organiser of one
    collection cannot make a token reading another one through a team enrolled there, and the
    token does not follow its team into a collection another organiser enrols it in later."""
    if is_admin(me):
        return True
    if me.role != "organiser":
        return False
    if role == "participant":
        return all(may_organise(me, c) for c in (*collections, *team_enrolled))
    return role == "assessor" and bool(collections) and all(may_organise(me, c) for c in collections)


def may_revoke_token(me: Principal) -> bool:
    return is_admin(me)


def may_list_tokens(me: Principal) -> bool:
    """Every token's prefix, name, role and team (never a secret: only hashes are stored)."""
    return is_admin(me)


# ------------------------------------------------------------------------ judging
def may_manage_pools(me: Principal, coll: Collection) -> bool:
    """Build pools, assign assessors, request analyses."""
    return may_organise(me, coll.id)


def may_read_pool(me: Principal, pool: Pool) -> bool:
    """A pool's description: its collection's organisers and the collection's assessors."""
    return may_organise(me, pool.collection_id) or any(c == pool.collection_id for c, _ in me.assigned)


def may_assess(me: Principal, collection_id: int, topic: str) -> bool:
    """Organisers judge any topic of their collections; assessors their assigned topics."""
    return may_organise(me, collection_id) or (collection_id, topic) in me.assigned


def is_assessor(me: Principal) -> bool:
    return me.role == "assessor"


# ------------------------------------------------------------------------ judgment sets, judges tracks
def may_list_judgment_sets(me: Principal, coll: Collection) -> bool:
    """The list of judgment sets: organisers (every set) and enrolled teams (their own
    submitted sets only: see :func:`may_see_judgment_set`)."""
    return may_read_collection(me, coll) and (may_see_qrels(me, coll) or is_enrolled(me, coll))


def may_see_judgment_set(me: Principal, coll: Collection, js: JudgmentSet) -> bool:
    """A set's provenance and versions: organisers; the team that submitted it, while enrolled.
    Nobody else, so a judge team never reads the official judgments nor another team's."""
    return may_see_qrels(me, coll) or (js.team_id is not None and me.team_id == js.team_id
                                       and is_enrolled(me, coll))


def may_submit_judgments(me: Principal, coll: Collection) -> bool:
    """A judges track's submissions: enrolled teams, while the organisers accept them."""
    return is_enrolled(me, coll) and me.team_id is not None and coll.accepts_judgments


def may_download_judge_pool(me: Principal, coll: Collection) -> bool:
    """What a judges track's teams judge (the documents of the collection's pools, exactly what
    a judge file is checked against, and nothing else): organisers always; enrolled teams while
    the track is open. Assessors judge their assigned topics only (:func:`may_assess`)."""
    return may_organise(me, coll.id) or may_submit_judgments(me, coll)


def judge_board_released(coll: Collection) -> bool:
    return bool((coll.judge_track or {}).get("released"))


def may_see_judge_board(me: Principal, coll: Collection) -> bool:
    """Organisers and enrolled teams (their own rows until the release); once the organisers
    release it, whoever may read the collection."""
    return may_read_collection(me, coll) and (may_see_qrels(me, coll) or is_enrolled(me, coll)
                                              or judge_board_released(coll))


def sees_all_judge_rows(me: Principal, coll: Collection) -> bool:
    return may_see_qrels(me, coll) or judge_board_released(coll)
