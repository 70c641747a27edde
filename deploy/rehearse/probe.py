"""Read-only look at a device's home, run there as the service user (rehearse.sh pipes it in):
one JSON line with row counts, the integrity check, the schema version and every file in the
home that is not private to the service user.

    runuser -u companion -- /opt/companion/.venv/bin/python - /var/lib/companion < probe.py
"""

import json
import os
import sqlite3
import stat
import sys
from pathlib import Path

home = Path(sys.argv[1])
out: dict = {"home": home.exists()}
db_path = home / "companion.db"
if db_path.exists():
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    out["integrity"] = one("PRAGMA integrity_check")
    out["schema"] = one("SELECT MAX(version) FROM schema_migrations")
    out["sessions"] = dict(db.execute("SELECT status, COUNT(*) FROM sessions GROUP BY status"))
    out["answers"] = one("SELECT COUNT(*) FROM self_reports")
    out["turns"] = one("SELECT COUNT(*) FROM turns")
    out["scheduled_held"] = one(
        "SELECT COUNT(*) FROM invitations i JOIN sessions s ON s.id = i.session_id "
        "WHERE i.outcome = 'accepted' AND s.status = 'completed'"
    )
    last = db.execute("SELECT id, status FROM sessions ORDER BY id DESC LIMIT 1").fetchone()
    out["last_session"] = {"id": last[0], "status": last[1]} if last else None
    if last:
        out["last_session"]["answers"] = one(
            f"SELECT COUNT(*) FROM self_reports WHERE session_id = {int(last[0])}"
        )
    db.close()
uid = os.getuid()
out["not_private"] = [
    f"{p} {stat.S_IMODE(p.lstat().st_mode):o} uid={p.lstat().st_uid}"
    for p in [home, *home.rglob("*")] if home.exists()
    if not stat.S_ISLNK(p.lstat().st_mode)
    and (p.lstat().st_mode & 0o077 or p.lstat().st_uid != uid)
]
out["leftovers"] = sorted(
    p.name for p in home.glob("*") if p.name.startswith(("collect-", "pre-update", "exports"))
) if home.exists() else []
print(json.dumps(out))
