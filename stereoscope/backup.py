"""Backups of a whole install, and their restore (`manage.py backup`, `manage.py restore ARCHIVE`).

An archive is one dated `stereoscope-backup-<UTC time>.tar.gz` holding:

    database/stereoscope.sqlite3   (SQLite: a consistent copy made with SQLite's online-backup API)
    database/stereoscope.pgdump    (PostgreSQL: `pg_dump --format=custom`, one consistent snapshot)
    secret_key                     the install's key file (when the key comes from the file, not the environment)
    media/...                      uploaded files (settings.MEDIA_ROOT)
    exports/...                    export bundles (settings.EXPORT_ROOT)
    manifest.json                  what is inside: every file with its size and SHA-256, the database vendor and
                                   the migrations it has, the software version

The database is copied first and the files after it, so every bundle a database row names is in the archive.
Restore checks every checksum before it changes anything, refuses an install that already holds work unless forced,
then writes the database, the key and the files, and migrates the database to this version's schema.
The project package imports no app: the emptiness check reads only the project's own Study and the user model.
"""

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
import zlib
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import connections

FORMAT = "stereoscope-backup"
FORMAT_VERSION = 1
PREFIX = "stereoscope-backup-"
SUFFIX = ".tar.gz"
MANIFEST = "manifest.json"
SQLITE_MEMBER = "database/stereoscope.sqlite3"
PG_MEMBER = "database/stereoscope.pgdump"
KEY_MEMBER = "secret_key"
SKIPPED_SUFFIXES = (".part",)  # files being written (an export's temporary file): not finished work


class BackupError(Exception):
    """A backup or restore cannot go on; the message says why and what to do."""


def backup_root():
    return Path(getattr(settings, "BACKUP_ROOT", None) or Path(settings.DATA_DIR) / "backups")


def key_file():
    return Path(settings.DATA_DIR) / "secret_key"


def file_roots():
    """(archive folder, directory) of the file trees an archive holds."""
    return [("media", Path(settings.MEDIA_ROOT)), ("exports", Path(settings.EXPORT_ROOT))]


def _vendor(alias="default"):
    return connections[alias].vendor


def _pg_args(alias="default"):
    """(pg_* connection arguments, environment) for the database `alias`."""
    s = connections[alias].settings_dict
    args = ["--dbname", s["NAME"]]
    if s.get("HOST"):
        args += ["--host", s["HOST"]]
    if s.get("PORT"):
        args += ["--port", str(s["PORT"])]
    if s.get("USER"):
        args += ["--username", s["USER"]]
    env = dict(os.environ)
    if s.get("PASSWORD"):
        env["PGPASSWORD"] = s["PASSWORD"]
    return args, env


def _run_pg(tool, args, env):
    if shutil.which(tool) is None:
        raise BackupError(f"{tool} was not found: install the PostgreSQL client tools (Debian: postgresql-client).")
    done = subprocess.run([tool, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise BackupError(f"{tool} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def _applied_migrations(alias="default"):
    """{app: last applied migration} (what the archive's schema is)."""
    from django.db.migrations.recorder import MigrationRecorder

    latest = {}
    for app, name in MigrationRecorder(connections[alias]).applied_migrations():
        latest[app] = max(latest.get(app, ""), name)
    return dict(sorted(latest.items()))


def _dump_database(workdir, alias="default"):
    """A consistent copy of the database in `workdir`; returns (archive member name, path)."""
    vendor = _vendor(alias)
    if vendor == "sqlite":
        source = connections[alias].settings_dict["NAME"]
        target = Path(workdir) / "stereoscope.sqlite3"
        src = sqlite3.connect(source, timeout=30)
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)  # the online-backup API: a consistent snapshot while others write
        finally:
            dst.close()
            src.close()
        return SQLITE_MEMBER, target
    if vendor == "postgresql":
        target = Path(workdir) / "stereoscope.pgdump"
        args, env = _pg_args(alias)
        _run_pg("pg_dump", ["--format=custom", "--no-owner", "--no-privileges", "--file", str(target), *args], env)
        return PG_MEMBER, target
    raise BackupError(f"Backups support SQLite and PostgreSQL, not {vendor}.")


class _HashingReader(io.RawIOBase):
    def __init__(self, fh):
        self.fh, self.digest, self.size = fh, hashlib.sha256(), 0

    def readable(self):
        return True

    def read(self, n=-1):
        data = self.fh.read(n)
        self.digest.update(data)
        self.size += len(data)
        return data


def _add_file(tar, path, member, entries):
    """Add one file, hashing it on its way in (its size is the open file's, so a file replaced meanwhile is
    archived whole, as it was when opened)."""
    with open(path, "rb") as fh:
        info = tarfile.TarInfo(member)
        stat = os.fstat(fh.fileno())
        info.size, info.mtime, info.mode = stat.st_size, int(stat.st_mtime), 0o600 if member == KEY_MEMBER else 0o644
        reader = _HashingReader(fh)
        tar.addfile(info, reader)
        entries.append({"path": member, "bytes": reader.size, "sha256": reader.digest.hexdigest()})


def _tree_files(root, skip=()):
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if (here / d).resolve() not in skip)
        for name in sorted(filenames):
            path = here / name
            if name.endswith(SKIPPED_SUFFIXES) or not path.is_file() or path.is_symlink():
                continue
            found.append(path)
    return found


def archive_name(now=None):
    now = now or datetime.now(timezone.utc)
    return f"{PREFIX}{now.strftime('%Y%m%dT%H%M%S%fZ')}{SUFFIX}"


def create_backup(output_dir=None, alias="default"):
    """Write an archive into `output_dir` (settings.BACKUP_ROOT, else <data dir>/backups). Returns (path, manifest)."""
    output_dir = Path(output_dir or backup_root())
    output_dir.mkdir(parents=True, exist_ok=True)
    created = datetime.now(timezone.utc)
    path = output_dir / archive_name(created)
    part = path.with_name(path.name + ".part")
    entries = []
    skip = {output_dir.resolve()}
    with tempfile.TemporaryDirectory(prefix=".backup-", dir=output_dir) as workdir:
        try:
            with tarfile.open(part, "w:gz", compresslevel=6) as tar:
                member, dump = _dump_database(workdir, alias)  # first: every file a row names exists by then
                _add_file(tar, dump, member, entries)
                dump.unlink()
                key = key_file()
                key_source = "environment" if os.environ.get("SECRET_KEY") else None
                if key.is_file():
                    _add_file(tar, key, KEY_MEMBER, entries)
                    key_source = key_source or "file"
                for folder, root in file_roots():
                    for file in _tree_files(root, skip):
                        rel = file.relative_to(root).as_posix()
                        _add_file(tar, file, f"{folder}/{rel}", entries)
                manifest = {
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "created_at": created.isoformat(),
                    "database": {
                        "vendor": _vendor(alias),
                        "member": member,
                        "migrations": _applied_migrations(alias),
                    },
                    "secret_key": key_source,
                    "software": _software(),
                    "files": entries,
                }
                data = json.dumps(manifest, indent=2).encode()
                info = tarfile.TarInfo(MANIFEST)
                info.size, info.mtime = len(data), int(created.timestamp())
                tar.addfile(info, io.BytesIO(data))
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)
    return path, manifest


def _software():
    try:
        from importlib.metadata import version

        return {"stereoscope": version("stereoscope")}
    except Exception:
        return {}


def prune(output_dir=None, keep=None):
    """Delete all but the `keep` newest archives in `output_dir`. Returns the deleted paths."""
    if not keep or keep < 1:
        return []
    output_dir = Path(output_dir or backup_root())
    archives = sorted(p for p in output_dir.glob(f"{PREFIX}*{SUFFIX}") if p.is_file())
    old = archives[:-keep]
    for path in old:
        path.unlink()
    return old


# -- restore --------------------------------------------------------------------------------------------------------


def _safe_member(name):
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts and name == path.as_posix()


def read_archive(archive):
    """Check the archive against its manifest (every checksum, no stray or unsafe member); returns the manifest.
    One pass reads every byte, so a damaged archive is refused before anything is changed."""
    archive = Path(archive)
    if not archive.is_file():
        raise BackupError(f"No archive at {archive}.")
    digests, manifest = {}, None
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for info in tar:
                if not info.isfile() or not _safe_member(info.name):
                    raise BackupError(f"{archive.name} holds {info.name!r}, which no Stereoscope backup holds.")
                fh = tar.extractfile(info)
                if info.name == MANIFEST:
                    manifest = json.load(fh)
                    continue
                digest = hashlib.sha256()
                for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    digest.update(block)
                digests[info.name] = digest.hexdigest()
    except BackupError:
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError, zlib.error) as exc:
        raise BackupError(f"{archive.name} cannot be read ({exc}): the archive is damaged.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{archive.name} is not a Stereoscope backup (it has no backup manifest).")
    if manifest.get("format_version", 0) > FORMAT_VERSION:
        raise BackupError(f"{archive.name} was written by a newer Stereoscope; upgrade before restoring it.")
    expected = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    stray = sorted(set(digests) - set(expected))
    if stray:
        raise BackupError(f"{archive.name} holds {stray[0]!r}, which its manifest does not list.")
    missing = sorted(set(expected) - set(digests))
    if missing:
        raise BackupError(f"{archive.name} lacks {', '.join(missing[:5])}: the archive is incomplete.")
    for name, digest in sorted(digests.items()):
        if digest != expected[name]:
            raise BackupError(f"{name} in {archive.name} does not match its checksum: the archive is damaged.")
    return manifest


def existing_work(alias="default"):
    """What this install already holds (empty list: it is empty). An install with no study, no user account but
    site admins, and no uploaded or exported file is empty."""
    from django.contrib.auth import get_user_model

    from .models import Study

    found = []
    tables = set(connections[alias].introspection.table_names())
    if Study._meta.db_table in tables:
        n = Study.objects.using(alias).count()
        if n:
            found.append(f"{n} studies")
    User = get_user_model()
    if User._meta.db_table in tables:
        n = User.objects.using(alias).filter(is_superuser=False).count()
        if n:
            found.append(f"{n} user accounts")
    for folder, root in file_roots():
        n = len(_tree_files(root))
        if n:
            found.append(f"{n} files in {folder} ({root})")
    return found


def _restore_database(path, vendor, alias="default"):
    here = _vendor(alias)
    if vendor != here:
        raise BackupError(
            f"The archive holds a {vendor} database and this install uses {here}: restore it into a {vendor} install."
        )
    connections[alias].close()
    if vendor == "sqlite":
        target = connections[alias].settings_dict["NAME"]
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        src = sqlite3.connect(path)
        dst = sqlite3.connect(target, timeout=30)
        try:
            src.backup(dst)  # replaces every page of the target, whatever it held
        finally:
            dst.close()
            src.close()
        return
    args, env = _pg_args(alias)
    _run_pg(
        "pg_restore",
        ["--clean", "--if-exists", "--no-owner", "--no-privileges", "--single-transaction", *args, str(path)],
        env,
    )


def restore_backup(archive, *, force=False, alias="default", migrate=True):
    """Restore an archive into this install. Returns a summary dict."""
    manifest = read_archive(archive)
    database = manifest["database"]
    if database["vendor"] != _vendor(alias):
        raise BackupError(
            f"The archive holds a {database['vendor']} database and this install uses {_vendor(alias)}: "
            f"restore it into a {database['vendor']} install."
        )
    if not force:
        found = existing_work(alias)
        if found:
            raise BackupError(
                "This install is not empty (" + "; ".join(found) + "). Restore into a fresh install, or pass --force "
                "to replace its database and write the archive's files over its own."
            )
    roots = dict(file_roots())
    counts = {"media": 0, "exports": 0}
    with tempfile.TemporaryDirectory(prefix="stereoscope-restore-") as workdir, tarfile.open(archive, "r:gz") as tar:
        for info in tar:
            if info.name == MANIFEST:
                continue
            if info.name == database["member"]:
                dump = Path(workdir) / PurePosixPath(info.name).name
                with tar.extractfile(info) as src, open(dump, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                _restore_database(dump, database["vendor"], alias)
                dump.unlink()
            elif info.name == KEY_MEMBER:
                key = key_file()
                key.parent.mkdir(parents=True, exist_ok=True)
                key.write_bytes(tar.extractfile(info).read())
                key.chmod(0o600)
            else:
                folder, _, rel = info.name.partition("/")
                if folder not in roots or not rel:
                    continue
                target = roots[folder] / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                part = target.with_name(target.name + ".restoring")
                with tar.extractfile(info) as src, open(part, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(part, target)
                counts[folder] += 1
    if migrate:
        from django.core.management import call_command

        call_command("migrate", database=alias, interactive=False, verbosity=0)
    return {
        "created_at": manifest["created_at"],
        "vendor": database["vendor"],
        "secret_key": manifest.get("secret_key"),
        "media_files": counts["media"],
        "export_files": counts["exports"],
    }
