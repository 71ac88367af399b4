"""Where ``cranfield remote login`` keeps the server's URL and the token.

One JSON file, ``remote.json`` in the user's config folder (``$XDG_CONFIG_HOME/cranfield``,
else ``~/.config/cranfield``): ``{"url": ..., "token": ...}``. The folder is made 0700 and the
file 0600, written whole to a temporary file and renamed, so it is never seen half written
nor, for a moment, readable by others.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from service.errors import InvalidInput

FILE_NAME = "remote.json"


@dataclass(frozen=True)
class Credentials:
    url: str
    token: str | None = None


def path_in(config_dir: Path) -> Path:
    return config_dir / FILE_NAME


def load(path: Path) -> Credentials | None:
    """The saved credentials, or None when there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidInput(str(path), None, f"cannot read the file: {exc.strerror}") from None
    try:
        doc = json.loads(text)
    except ValueError:
        raise InvalidInput(str(path), None, "not JSON; run `cranfield remote login URL` again") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("url"), str) or not isinstance(doc.get("token"),
                                                                                           (str, type(None))):
        raise InvalidInput(str(path), None, 'expected {"url": ..., "token": ...}; run `cranfield remote login URL`')
    return Credentials(doc["url"], doc.get("token"))


def save(path: Path, credentials: Credentials) -> None:
    """Write the file: folder 0700, file 0600 from its creation on."""
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)  # mkdir's mode is subject to the umask, and the folder may be older
    fd, tmp = tempfile.mkstemp(prefix=".remote-", suffix=".json", dir=folder)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"url": credentials.url, "token": credentials.token}, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove(path: Path) -> bool:
    """Delete the file; False when there was none."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def readable_by_others(path: Path) -> bool:
    """Whether the group or other users may read or write the file (a copied or edited one)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IRWXG | stat.S_IRWXO))
