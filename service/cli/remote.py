"""``cranfield remote``: a participant's (or organiser's) commands against a server, over its API.

  login URL, logout        keep the URL and token in the user's config file (0600), or forget them
  collections, runs        what the token may see (text for people: yes/no, local times; tsv, json: data)
  submit COLLECTION RUN    upload a run with its metadata (a progress bar on stderr); warnings
  wait JOB | --run RUN     poll until an evaluation is done (exit 1 when it failed)
  board COLLECTION         the leaderboard (tsv, json, csv)
  scores RUN               per-topic scores (trec_eval -q layout, the run named on a runid line, or json)

Every command speaks only the public HTTP API, through :mod:`service.client` (imported inside
the handlers, with httpx). ``CRANFIELD_URL`` and ``CRANFIELD_TOKEN`` override the config file.
Errors are the CLI's: ``cranfield: error: ...`` and exit code 1; a usage error exits 2.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from service.cli.arguments import positive_int
from service.cli.common import read_bytes
from service.cli.output import local_time, say, terminal_safe, write_json
from service.cli.registry import command
from service.errors import (
    BadRequest,
    CranfieldError,
    Forbidden,
    InvalidInput,
    InvalidMeasure,
    NotFound,
    Unauthenticated,
)

FINISHED_JOB = ("done", "failed")
FINISHED_RUN = ("evaluated", "failed")


class EvaluationFailed(CranfieldError):
    """The job or run waited for failed (exit code 1)."""


class TimedOut(CranfieldError):
    """``wait`` gave up before the evaluation finished (exit code 1)."""


# ------------------------------------------------------------------------------ arguments
def _yes_no(text: str) -> bool:
    if text.lower() in ("yes", "y", "true"):
        return True
    if text.lower() in ("no", "n", "false"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: say yes or no")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def _remote_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="remote_command", required=True, metavar="COMMAND")
    login = sub.add_parser("login", help="check a token against a server and keep both in the config file")
    login.add_argument("url", metavar="URL", help="the server, e.g. https://cranfield.example.org")
    login.add_argument("--token", help="the token (default: asked for on a terminal, else read from stdin)")
    sub.add_parser("logout", help="forget the saved URL and token")

    colls = sub.add_parser("collections", help="the collections the token may read")
    colls.add_argument("--format", choices=("text", "tsv", "json"), default="text",
                       help="text: for people (yes/no, local times); tsv, json: data (default: %(default)s)")

    runs = sub.add_parser("runs", help="the runs the token may list (its team's; all for organisers)")
    runs.add_argument("collection", nargs="?", metavar="COLLECTION", help="an id or a name (default: every one)")
    runs.add_argument("--format", choices=("text", "tsv", "json"), default="text",
                      help="text: for people (yes/no, local times); tsv, json: data (default: %(default)s)")

    sb = sub.add_parser("submit", help="upload a run with its metadata; prints run id, job id and warnings")
    sb.add_argument("collection", metavar="COLLECTION", help="an id or a name")
    sb.add_argument("run", metavar="RUN", help="the run file (TREC: topic Q0 docno rank score tag)")
    sb.add_argument("--description", help="what the run does")
    sb.add_argument("--type", dest="run_type", choices=("automatic", "manual", "interactive"),
                    help="how the run was made (default: automatic, as the server records a run without one)")
    sb.add_argument("--primary", action="store_true", default=None, help="the team's primary run")
    sb.add_argument("--priority", type=positive_int, help="judging priority within the team (1 = first)")
    sb.add_argument("--training-data", type=_yes_no, metavar="yes|no", help="uses the collection's training data")
    sb.add_argument("--external-resources", type=_yes_no, metavar="yes|no", help="uses external resources")
    sb.add_argument("--ir-metadata", metavar="FILE", help="an ir_metadata (PRIMAD) YAML file")
    sb.add_argument("--team", help="organisers: the team the run is submitted for")
    sb.add_argument("--idempotency-key", metavar="KEY",
                    help="send the same KEY again to retry a submission without storing it twice (default: new)")
    sb.add_argument("--reproduces", type=positive_int, metavar="ORIGINAL_RUN_ID",
                    help="declare the run a reproduction of this registered original run (a reproducibility track)")
    sb.add_argument("--reproduces-pair", type=positive_int, nargs=2, metavar=("MY_BASELINE_RUN", "ORIGINAL_BASELINE"),
                    help="with --reproduces (the original advanced run): the run and your run MY_BASELINE_RUN "
                         "reproduce the original pair (ORIGINAL_BASELINE, the --reproduces run)")
    sb.add_argument("--wait", action="store_true", help="then wait until the run is evaluated")
    sb.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                    help="with --wait: give up after SECONDS (default: wait as long as it takes)")
    sb.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: %(default)s)")

    wt = sub.add_parser("wait", help="wait until an evaluation job (or a run's evaluation) is done")
    wt.add_argument("job", nargs="?", type=positive_int, metavar="JOB", help="a job id (organisers read jobs)")
    wt.add_argument("--run", type=positive_int, metavar="RUN", help="wait for this run instead (its team may)")
    wt.add_argument("--timeout", type=_seconds, metavar="SECONDS", help="give up after SECONDS (default: never)")
    wt.add_argument("--interval", type=_seconds, default=1.0, metavar="SECONDS", help="between polls (default 1)")

    bd = sub.add_parser("board", help="the leaderboard, as the server ranks it")
    bd.add_argument("collection", metavar="COLLECTION", help="an id or a name")
    bd.add_argument("-m", "--metric", help="default: the official metric")
    bd.add_argument("--primary-only", action="store_true", help="each team's primary runs only")
    bd.add_argument("--format", choices=("tsv", "json", "csv"), default="tsv", help="output format (default: %(default)s)")

    jd = sub.add_parser("judgments", help="a judges track: submit an automatic judge's qrels for the pool")
    jd.add_argument("collection", metavar="COLLECTION", help="an id or a name")
    jd.add_argument("file", metavar="QRELS", help="judgments of pool documents (TREC or NTCIR qrels)")
    jd.add_argument("--name", required=True, help="your judgment set's name (again: its next version)")
    jd.add_argument("--model", help="the judge's model")
    jd.add_argument("--prompt", help="its prompt, or the prompt's name or URL")
    jd.add_argument("--judged-on", help="when it judged (an ISO date)")
    jd.add_argument("--notes")
    jd.add_argument("--idempotency-key", metavar="KEY", help="as for submit (default: new)")
    jd.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: %(default)s)")

    rb = sub.add_parser("repro-board", help="a reproducibility board: every reproduction with its measures and "
                                            "verdict")
    rb.add_argument("collection", metavar="COLLECTION", help="an id or a name")
    rb.add_argument("-m", "--metric", help="default: the official metric")
    rb.add_argument("--format", choices=("tsv", "json", "csv"), default="tsv", help="output format (default: %(default)s)")

    jb = sub.add_parser("judge-board", help="a judges track's board: judges ranked by agreement with the official "
                                            "judgments")
    jb.add_argument("collection", metavar="COLLECTION", help="an id or a name")
    jb.add_argument("--format", choices=("tsv", "json"), default="tsv", help="output format (default: %(default)s)")

    jp = sub.add_parser("judge-pool", help="a judges track: the documents to judge (topic docno lines)")
    jp.add_argument("collection", metavar="COLLECTION", help="an id or a name")
    jp.add_argument("-o", "--output", metavar="FILE", help="write them to FILE (default: stdout)")

    sc = sub.add_parser("scores", help="a run's per-topic scores")
    sc.add_argument("run", metavar="RUN", help="the run's id, or its tag (with --collection when tags repeat)")
    sc.add_argument("--collection", metavar="COLLECTION", help="where to look the tag up (an id or a name)")
    sc.add_argument("-m", "--metric", action="append", dest="metrics", metavar="METRIC",
                    help="repeatable (default: every metric of the collection)")
    sc.add_argument("--format", choices=("trec", "json"), default="trec",
                    help="trec: trec_eval -q layout (default: %(default)s)")


# ------------------------------------------------------------------------------ the connection
@dataclass(frozen=True)
class Remote:
    """The server and token a command uses, and where the token came from (for messages)."""

    url: str
    token: str | None
    origin: str  # "CRANFIELD_TOKEN", the config file's path, or "" (no token)

    def client(self):  # type: ignore[no-untyped-def]
        from service.client import Client

        return Client(self.url, self.token)


def _config_path() -> Path:
    from service.client import credentials
    from service.config import remote_settings

    return credentials.path_in(remote_settings().config_dir)


def _remote() -> Remote:
    """The environment's URL and token over the config file's. The saved token goes only to
    the saved server: with CRANFIELD_URL naming another one, it is not sent."""
    from service.client import credentials
    from service.config import remote_settings

    env = remote_settings()
    path = credentials.path_in(env.config_dir)
    saved = credentials.load(path)
    if saved is not None and credentials.readable_by_others(path):
        say(f"cranfield: warning: {path} is readable by other users; run `chmod 600 {path}`")
    url = env.url or (saved.url if saved else None)
    if not url:
        raise InvalidMeasure("no server: run `cranfield remote login URL` or set CRANFIELD_URL")
    if env.token:
        return Remote(_checked_url(url), env.token, "CRANFIELD_TOKEN")
    if saved is not None and saved.token and _same_server(saved.url, url):
        return Remote(_checked_url(url), saved.token, str(path))
    return Remote(_checked_url(url), None, "")


def _checked_url(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidMeasure(f"{url!r} is not a server's URL: give http(s)://HOST[:PORT][/PATH]")
    return url.strip().rstrip("/")


def _same_server(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


def _explained(exc: CranfieldError, remote: Remote) -> CranfieldError:
    """A refusal with what to do about it: which token was refused, and how to send another."""
    if isinstance(exc, Unauthenticated):
        if remote.token is None:
            return Unauthenticated(f"{exc}; this needs a token: run `cranfield remote login {remote.url}` "
                                   "or set CRANFIELD_TOKEN")
        return Unauthenticated(f"the server refused the token from {remote.origin} ({exc}); run "
                               f"`cranfield remote login {remote.url}` with a valid token")
    if remote.token is None and isinstance(exc, (NotFound, Forbidden)):  # perhaps only hidden from anonymity
        return type(exc)(f"{exc}; no token was sent: run `cranfield remote login {remote.url}` or set "
                         "CRANFIELD_TOKEN")
    return exc


@command("remote", "a server's API from anywhere: login, submit, runs, wait, board, scores, judgments",
         _remote_arguments,
         description="Use a Cranfield server through its public HTTP API (docs/client.md).")
def cmd_remote(args: argparse.Namespace, out: TextIO) -> int:
    if args.remote_command == "login":
        return _login(args, out)
    if args.remote_command == "logout":
        return _logout(out)
    remote = _remote()
    client = remote.client()
    try:
        return HANDLERS[args.remote_command](args, client, out)
    except CranfieldError as exc:
        raise _explained(exc, remote) from None
    finally:
        client.close()


# ------------------------------------------------------------------------------ login, logout
def _read_token(given: str | None) -> str:
    if given is not None:
        token = given
    elif sys.stdin.isatty():
        import getpass

        token = getpass.getpass("token: ")
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise InvalidMeasure("no token: give --token, type it when asked, or pipe it to stdin")
    return token


def _login(args: argparse.Namespace, out: TextIO) -> int:
    from service.client import Client, RemoteError, credentials

    url = _checked_url(args.url)
    token = _read_token(args.token)
    if url.startswith("http://") and not _local(url):
        say("cranfield: warning: the token goes over plain http; prefer https")
    with Client(url, token) as client:
        try:
            client.collections()  # the token must be the server's, and the server a Cranfield one
        except Unauthenticated as exc:
            raise Unauthenticated(f"{url} refused the token ({exc}); nothing was saved") from None
        except CranfieldError as exc:  # not reachable, not a Cranfield server, ...
            raise RemoteError(f"{exc}; nothing was saved") from None
    path = _config_path()
    credentials.save(path, credentials.Credentials(url, token))
    out.write(f"logged in to {url}; the token is kept in {path} (mode 0600)\n")
    return 0


def _local(url: str) -> bool:
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "") in ("localhost", "127.0.0.1", "::1")


def _logout(out: TextIO) -> int:
    from service.client import credentials

    path = _config_path()
    out.write(f"removed {path}\n" if credentials.remove(path) else f"not logged in ({path} does not exist)\n")
    return 0


# ------------------------------------------------------------------------------ listings
def _tsv(out: TextIO, header: list[str], rows: list[list[Any]]) -> int:
    """Rows as TSV, data (issue 37): booleans ``true``/``false``, times as the API's ISO 8601."""
    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return "" if v is None else str(v).replace("\t", " ").replace("\n", " ")

    out.writelines("\t".join(map(cell, row)) + "\n" for row in [header, *rows])
    return 0


def _listing(out: TextIO, fmt: str, header: list[str], rows: list[list[Any]], times: tuple[str, ...]) -> int:
    """``rows`` as TSV (data: :func:`_tsv`), or as text for people (issue 37): the same columns
    with booleans as ``yes``/``no`` and the ``times`` columns as the user's local time
    (``2026-11-28 23:31``), not the API's ISO 8601."""
    if fmt == "tsv":
        return _tsv(out, header, rows)
    at = [header.index(name) for name in times]

    def person(k: int, v: Any) -> Any:
        if isinstance(v, bool):
            return "yes" if v else "no"
        return local_time(v) if k in at else v

    return _tsv(out, header, [[person(k, v) for k, v in enumerate(row)] for row in rows])


def _collections(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    items = client.collections()
    if args.format == "json":
        return write_json(items, out)
    return _listing(out, args.format, ["id", "name", "visibility", "enrolment", "enrolled", "official_metric",
                                       "released", "opens_at", "closes_at"],
                    [[c["id"], c["name"], c.get("visibility"), c.get("enrolment"), c.get("enrolled"),
                      c.get("official_metric"), c.get("leaderboard_released"), c.get("submission_opens_at"),
                      c.get("submission_closes_at")] for c in items], times=("opens_at", "closes_at"))


def _runs(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    if args.collection:
        colls = [client.find_collection(args.collection)]
    else:
        colls = client.collections()
    items, quotas = [], {}
    for coll in colls:
        try:
            page = client.runs(coll["id"])
        except Forbidden:
            if args.collection:
                raise
            continue  # a public collection the caller's team is not enrolled in
        items.extend({**r, "collection": coll["name"]} for r in page["items"])
        if page.get("quota"):
            quotas[coll["name"]] = page["quota"]
    if args.format == "json":
        return write_json(items, out)
    for name, q in quotas.items():
        say(f"{name}: {q['used_today']} of {q['per_day']} runs today (resets at {local_time(q['resets_at'])})")
    return _listing(out, args.format, ["id", "collection", "tag", "team", "status", "type", "primary", "priority",
                                       "submitted_at", "description"],
                    [[r["id"], r["collection"], r["tag"], r["team"], r["status"], r.get("run_type"), r.get("primary"),
                      r.get("priority"), r.get("submitted_at"), r.get("description")] for r in items],
                    times=("submitted_at",))


# ------------------------------------------------------------------------------ submit
class ProgressBar:
    """Upload progress on ``stream``: redrawn in place on a terminal; always a final line."""

    WIDTH = 30

    def __init__(self, name: str, stream: TextIO) -> None:
        self.name = name
        self.stream = stream
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self.drawn = 0.0
        self.total = 0

    def __call__(self, sent: int, total: int) -> None:
        self.total = total
        now = time.monotonic()
        if not self.tty or (now - self.drawn < 0.1 and sent < total):
            return
        self.drawn = now
        filled = self.WIDTH * sent // max(total, 1)
        self.stream.write(f"\rupload {self.name} [{'#' * filled}{' ' * (self.WIDTH - filled)}] "
                          f"{100 * sent // max(total, 1):3d}% {_size(sent)}/{_size(total)}")
        self.stream.flush()

    def finish(self, size: int | None = None) -> None:
        """The last line: the file's ``size`` (what the user knows of it), not the request's."""
        if self.tty:
            self.stream.write("\r\033[K")
        shown = _size(self.total if size is None else size)
        self.stream.write(f"uploaded {self.name} ({shown}) in {time.monotonic() - self.started:.1f} s\n")
        self.stream.flush()


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    return f"{n / 1000:.1f} kB" if n < 1_000_000 else f"{n / 1_000_000:.1f} MB"


def _submit(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    from service.client import RunMetadata, Upload

    run = Upload(Path(args.run).name, read_bytes(args.run), "text/plain")
    ir = Upload(Path(args.ir_metadata).name, read_bytes(args.ir_metadata), "application/yaml") \
        if args.ir_metadata else None
    metadata = RunMetadata(description=args.description, run_type=args.run_type,
                           uses_training_data=args.training_data, uses_external_resources=args.external_resources,
                           priority=args.priority, primary=args.primary)
    coll = client.find_collection(args.collection)
    bar = ProgressBar(run.name, sys.stderr)
    try:
        # one key per invocation: a retry after a lost connection is answered, not stored again
        if args.reproduces_pair and not args.reproduces:
            raise BadRequest("--reproduces-pair names the pair's baseline runs: give --reproduces ORIGINAL_ADVANCED too")
        doc = client.submit_run(coll["id"], run, metadata, team=args.team, ir_metadata=ir,
                                idempotency_key=args.idempotency_key or str(uuid.uuid4()), progress=bar,
                                reproduces=None if args.reproduces_pair else args.reproduces)
    except InvalidInput as exc:  # the server's line, in the file the user named
        named = {run.name: args.run, "upload": args.run, "run upload": args.run,
                 **({ir.name: args.ir_metadata, "ir_metadata": args.ir_metadata} if ir else {})}
        raise InvalidInput(named.get(exc.source, exc.source), exc.line, exc.reason) from None
    except BadRequest as exc:
        if args.team is None and "?team=" in str(exc):  # an organiser's submission names its team
            raise BadRequest(f"{exc} (here: --team TEAM)") from None
        raise
    finally:
        if bar.total:
            bar.finish(Path(args.run).stat().st_size)
    if args.reproduces_pair:  # the pair (MY_BASELINE_RUN, this run) of (ORIGINAL_BASELINE, --reproduces)
        mine, original = args.reproduces_pair
        doc["reproduction"] = client.declare_reproduction(mine, original, doc["id"], args.reproduces)["id"]
    if args.format == "json":
        write_json(doc, out)
    else:
        _report_submission(doc, coll, out)
        if doc.get("reproduction") is not None:
            out.write(f"reproduction {doc['reproduction']} declared: the run reproduces run {args.reproduces}\n")
    if args.wait:
        return _wait_run(client, doc["id"], args.timeout, 1.0, out)
    return 0


def _report_submission(doc: dict[str, Any], coll: dict[str, Any], out: TextIO) -> None:
    out.write(f"run {doc['id']} stored: tag {doc['tag']}, team {doc['team']}, collection {coll['name']}\n")
    job = doc.get("job")
    out.write(f"job {job} evaluates it\n" if job is not None
              else "no evaluation job yet: the collection has no qrels\n")
    for w in doc.get("warnings") or []:
        topics = w.get("topics") or []
        shown = f" [topics: {', '.join(map(str, topics[:10]))}{', ...' if len(topics) > 10 else ''}]" if topics \
            else ""
        out.write(f"warning ({w.get('code', 'warning')}): {w.get('message', '')}{shown}\n")


# ------------------------------------------------------------------------------ wait
def _wait(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    if (args.job is None) == (args.run is None):
        raise InvalidMeasure("give a JOB or --run RUN (one of them)")
    if args.run is not None:
        return _wait_run(client, args.run, args.timeout, args.interval, out)
    try:
        return _wait_job(client, args.job, args.timeout, args.interval, out)
    except Forbidden as exc:
        raise Forbidden(f"{exc}; a participant reads only the job of its own submission: wait for your run with "
                        "`cranfield remote wait --run RUN`") from None


def _poll(read: Any, finished: Any, line: Any, timeout: float | None, interval: float) -> dict[str, Any]:
    """``read()`` until ``finished(doc)``, drawing ``line(doc)`` on a terminal's stderr."""
    tty = sys.stderr.isatty()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        doc = read()
        if tty:
            sys.stderr.write(f"\r\033[K{terminal_safe(line(doc))}")
            sys.stderr.flush()
        if finished(doc):
            if tty:
                sys.stderr.write("\n")
            return doc
        if deadline is not None and time.monotonic() >= deadline:
            if tty:
                sys.stderr.write("\n")
            raise TimedOut(f"gave up after {timeout:g} s: {line(doc)}")
        time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))


def _wait_job(client: Any, jid: int, timeout: float | None, interval: float, out: TextIO) -> int:
    def line(j: dict[str, Any]) -> str:
        return (f"job {jid} ({j['kind']}): {j['status']}, {j['done']} of {j['total']} runs evaluated"
                + (f", {j['failed']} failed" if j["failed"] else ""))

    job = _poll(lambda: client.job(jid), lambda j: j["status"] in FINISHED_JOB, line, timeout, interval)
    out.write(line(job) + "\n")
    if job["status"] == "failed":
        raise EvaluationFailed(f"job {jid} failed: {job.get('error') or 'no reason given'}")
    if job["failed"]:
        raise EvaluationFailed(f"job {jid} is done, but {job['failed']} of its {job['total']} runs failed")
    return 0


def _wait_run(client: Any, rid: int, timeout: float | None, interval: float, out: TextIO) -> int:
    def line(r: dict[str, Any]) -> str:
        return f"run {rid} ({r['tag']}): {r['status']}"

    run = _poll(lambda: client.run(rid), lambda r: r["status"] in FINISHED_RUN, line, timeout, interval)
    out.write(line(run) + "\n")
    if run["status"] == "failed":
        raise EvaluationFailed(f"run {rid} failed: {run.get('reason') or 'no reason given'}")
    return 0


# ------------------------------------------------------------------------------ board, scores
def _board(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    cid = client.find_collection(args.collection)["id"]
    if args.format == "csv":
        # the server's columns; its CSV lines end CRLF, a terminal's and a pipe's LF (the output
        # shows a lone CR as \x0d, as any control character)
        out.write(client.leaderboard_text(cid, "csv", args.metric, args.primary_only).replace("\r\n", "\n"))
        return 0
    doc = client.leaderboard(cid, args.metric, args.primary_only)
    if args.format == "json":
        return write_json(doc, out)
    for note in board_notes(doc):
        say(f"cranfield: {note}")
    return _tsv(out, ["rank", "run", "team", "mean", "interval", "topics", "baseline", "groups"],
                [[r["rank"], r["run"], r["team"], _fixed(r["mean"]), _interval(r, doc.get("bounds")),
                  r.get("n_topics"), bool(r.get("baseline")), r.get("groups") or ""] for r in doc["rows"]])


def _repro_board(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    """The reproducibility board: a line per reproduction (tsv), or the server's CSV or JSON."""
    coll = client.find_collection(args.collection)
    if args.format == "csv":
        out.write(client.reproducibility_csv(coll["id"], args.metric).replace("\r\n", "\n"))  # (as the board's)
        return 0
    doc = client.reproducibility_board(coll["id"], args.metric)
    if args.format == "json":
        return write_json(doc, out)
    # the collection's name and the metric are the server's text: escaped for the terminal (say)
    say(f"# {coll['name']}: {doc['metric']}" + (" (stale: the workers are measuring again)" if doc.get("stale") else "")
        + (" (some figures withheld from this token: see each verdict)" if any(
            r.get("withheld") for r in doc["rows"]) else ""))

    def tag(run: dict[str, Any] | None) -> str:
        return run["tag"] if run else "-"

    rows = [[r["id"], r["run"]["team"] if r["run"] else "-", tag(r["run"]) + ("+" + tag(r["advanced_run"])
                                                                             if r["advanced_run"] else ""),
             tag(r["original"]["run"]) + ("+" + tag(r["original"]["advanced_run"])
                                          if r["original"]["advanced_run"] else ""),
             "same" if r["same_collection"] else "other", r["verdict"]] for r in doc["rows"]]
    return _tsv(out, ["id", "team", "runs", "original", "collection", "verdict"], rows)


def _fixed(value: float | None, decimals: int = 4) -> str:
    return "" if value is None else f"{value:.{decimals}f}"


def _interval(row: dict[str, Any], bounds: dict[str, Any] | None) -> str:
    """The interval the board draws, for a person: the bootstrap interval when stored, else the t
    interval with an end beyond the metric's range shown at it and marked with a dagger (the
    board's truncation note says so): ``[0.2120, 0.3341]``."""
    if row.get("boot_ci_low") is not None and row.get("boot_ci_high") is not None:
        return f"[{_fixed(row['boot_ci_low'])}, {_fixed(row['boot_ci_high'])}]"
    low, high = row.get("t_ci_low", row.get("ci_low")), row.get("t_ci_high", row.get("ci_high"))
    if low is None or high is None:
        return ""
    floor = (bounds or {}).get("low")
    ceiling = (bounds or {}).get("high")
    low_cut = floor is not None and low < floor
    high_cut = ceiling is not None and high > ceiling
    dagger = "\u2020"
    return (f"[{_fixed(floor if low_cut else low)}{dagger if low_cut else ''}, "
            f"{_fixed(ceiling if high_cut else high)}{dagger if high_cut else ''}]")


def board_notes(doc: dict[str, Any]) -> list[str]:
    """What a person reads above a board: its metric and qrels version, the interval drawn, the
    significance test, whose runs it ranks (a team's own only until the release) and whether it
    is being re-evaluated."""
    version = doc.get("qrels_version") or "(none yet)"
    notes = [f"{doc['metric']} on qrels version {version}; interval: {doc.get('interval') or 'none'}"]
    sig = doc.get("significance")
    if sig:
        b = f", B = {sig['resamples']}" if sig.get("resamples") else ""
        notes.append(f"groups: runs sharing a letter are not significantly different ({sig['test']}{b}, "
                     f"alpha {sig['alpha']}, {sig['correction']} correction, {sig['n_topics']} topics)")
    else:
        notes.append("groups: no significance test is stored for this board yet")
    if doc.get("ranked_among") == "team":
        notes.append("the board is not released: it ranks your team's runs only")
    if doc.get("truncation_note"):
        notes.append(f"\u2020 {doc['truncation_note']}")
    if doc.get("reevaluation_in_progress"):
        notes.append("a re-evaluation is in progress: the board may change")
    return notes


def _run_id(client: Any, run: str, collection: str | None) -> int:
    """A run named by its id or by its tag (looked up among the runs the token may list)."""
    if run.isascii() and run.isdigit() and collection is None:
        return int(run)
    colls = [client.find_collection(collection)] if collection else client.collections()
    found = [(c, r) for c in colls for r in client.runs(c["id"])["items"] if r.get("tag") == run]
    if not found and run.isascii() and run.isdigit():
        return int(run)
    if not found:
        where = f"collection {collection}" if collection else "any collection this token may read"
        raise NotFound(f"no run tagged {run!r} in {where} (give its id, or check `cranfield remote runs`)")
    if len(found) > 1:
        names = ", ".join(str(c["name"]) for c, _ in found)
        raise InvalidMeasure(f"the tag {run!r} is in several collections ({names}): add --collection")
    return int(found[0][1]["id"])


def _scores(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    args.run = _run_id(client, args.run, args.collection)
    run = client.run(args.run)
    if args.format == "trec":
        served = [client.run_scores_trec(args.run, m) for m in (args.metrics or [None])]
        if all(text is not None for text in served):  # the server's definition of the layout
            out.write(_named(run["tag"], served[0] if len(served) == 1 else _merged_trec(served)))
            return 0
    metrics = args.metrics or client.collection(run["collection_id"]).get("metrics") or [None]
    docs = [client.run_scores(args.run, m) for m in metrics]
    if args.format == "json":
        return write_json({"run": run["tag"], "id": run["id"], "collection_id": run["collection_id"],
                           "qrels_version": docs[0].get("qrels_version"),
                           "metrics": {d["metric"]: next(iter(d["runs"].values()), None) for d in docs}}, out)
    out.write(_named(run["tag"], trec_layout(docs)))  # a server without format=trec: the same layout, written here
    return 0


def _named(tag: str, text: str) -> str:
    """The scores of the run tagged ``tag`` in trec_eval's layout, with the run named as
    ``cranfield eval --format trec`` names each run: a first line ``runid<TAB>all<TAB>TAG``
    (trec_eval's ``runid`` measure), unless the text has one already."""
    if text.startswith("runid\t"):
        return text
    return f"runid\tall\t{tag}\n{text}"


def _trec_lines(lines: list[tuple[str, str, str]]) -> str:
    """trec_eval's ``-q`` order: topic by topic (each with every metric, in order), then the
    ``all`` lines."""
    metrics = list(dict.fromkeys(m for m, _, _ in lines))
    topics = list(dict.fromkeys(t for _, t, _ in lines if t != "all"))
    value = {(m, t): v for m, t, v in lines}
    rows = [f"{m}\t{t}\t{value[m, t]}" for t in [*topics, "all"] for m in metrics if (m, t) in value]
    return "".join(f"{row}\n" for row in rows)


def _merged_trec(texts: list[str | None]) -> str:
    """The server's answers for one metric each, as one answer for them all."""
    return _trec_lines([tuple(ln.split("\t", 2)) for text in texts  # type: ignore[misc]
                        for ln in (text or "").splitlines() if ln.count("\t") == 2 and not ln.startswith("runid\t")])


def trec_layout(docs: list[dict[str, Any]], decimals: int = 4) -> str:
    """getRunScores documents (one per metric) in the layout the server writes for
    ``format=trec``: ``measure<TAB>topic<TAB>value`` with ``%.4f`` values, topic by topic, then
    each metric's mean as topic ``all``; a topic without a score has no line, as in trec_eval."""
    lines = []
    for doc in docs:
        scores = next(iter(doc["runs"].values()))
        lines += [(doc["metric"], t, f"{v:.{decimals}f}") for t, v in scores["per_topic"].items() if v is not None]
        if scores.get("mean") is not None:
            lines.append((doc["metric"], "all", f"{scores['mean']:.{decimals}f}"))
    return _trec_lines(lines)


def _judgments(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    from service.client import Upload

    cid = client.find_collection(args.collection)["id"]
    # the path as given: the server's errors name it ("judged/run1.qrels:12: ..."); a server that
    # names the upload generically ("judgments:100") has its error told in the user's file's name
    try:
        doc = client.submit_judgments(cid, Upload(str(args.file), read_bytes(args.file), "text/plain"), args.name,
                                      model=args.model, prompt=args.prompt, judged_on=args.judged_on,
                                      notes=args.notes, idempotency_key=args.idempotency_key or str(uuid.uuid4()))
    except InvalidInput as exc:
        generic = exc.source in (None, "", "judgments", "judgments upload", "upload", Path(args.file).name)
        raise InvalidInput(args.file if generic else exc.source, exc.line, exc.reason) from None
    if args.format == "json":
        return write_json(doc, out)
    coverage = "" if doc.get("coverage") is None else f", {doc['coverage']:.0%} of the pool"
    unjudged = f" ({doc['unjudged']} pooled, left unjudged)" if doc.get("unjudged") else ""
    out.write(f"judgment set {doc['judgment_set']} version {doc['version']}: {doc['judgments']} judgments"
              f"{unjudged}{coverage}; evaluation job {doc.get('job')}\n")
    return 0


def _judge_board(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    doc = client.judge_board(client.find_collection(args.collection)["id"])
    if args.format == "json":
        return write_json(doc, out)
    say(f"{doc['measure']} on {doc['metric']} against the official judgments ({doc['level']:.0%} bootstrap "
        f"interval){'; stale' if doc.get('stale') else ''}")
    return _tsv(out, ["rank", "set", "team", "model", "value", "low", "high", "bias"],
                [[r.get("rank"), r["judgment_set"], r.get("team"), r.get("model"), r.get("value"), r.get("low"),
                  r.get("high"), r.get("bias")] for r in doc["rows"]])


def _judge_pool(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    text = client.judge_pool(client.find_collection(args.collection)["id"])
    if args.output is None:
        out.write(text)
        return 0
    Path(args.output).write_text(text, encoding="utf-8")
    lines = text.splitlines()
    say(f"{len(lines)} documents of {len({line.split(' ', 1)[0] for line in lines})} topics to judge: {args.output}")
    return 0


HANDLERS = {"collections": _collections, "runs": _runs, "submit": _submit, "wait": _wait, "board": _board,
            "scores": _scores, "judgments": _judgments, "judge-board": _judge_board, "judge-pool": _judge_pool,
            "repro-board": _repro_board}
