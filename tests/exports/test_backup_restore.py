"""`manage.py backup` and `manage.py restore`, as an operator runs them: back up an install with codings, verdicts,
an export bundle, an uploaded file and its secret key, restore the archive into a fresh install (a new SQLite file,
or a new PostgreSQL database when the suite runs on PostgreSQL), and every study's exports come out byte for byte
the same (the pseudonyms in them depend on the restored key). Restore refuses an install that holds work unless
--force, and a damaged archive always."""

import io
import json
import os
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest
from django.db import connection

from exports import services
from tests.conftest import REPO_ROOT, subprocess_database_url

pytestmark = pytest.mark.django_db(transaction=True)
CHILD_DROPS = ("SECRET_KEY", "MEDIA_ROOT", "EXPORT_ROOT", "BACKUP_ROOT", "CELERY_TASK_ALWAYS_EAGER")


def child_env(database_url, data_dir):
    env = {k: v for k, v in os.environ.items() if k not in CHILD_DROPS}
    env.update(DATABASE_URL=database_url, STEREOSCOPE_DATA_DIR=str(data_dir), CELERY_SKIP_CHECKS="1")
    return env


def run(env, *args, check=True):
    done = subprocess.run([sys.executable, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def digests(env):
    return json.loads(run(env, "-m", "tests.exports.export_digests").stdout)


@pytest.fixture
def fresh_database_url(tmp_path):
    """A database no install has used yet, of the suite's own kind; dropped afterwards."""
    if connection.vendor == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh' / 'stereoscope.sqlite3'}"
        return
    name = f"wt_restore_{uuid.uuid4().hex[:12]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield subprocess_database_url().rsplit("/", 1)[0] + f"/{name}"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')


def test_backup_then_restore_into_a_fresh_install_gives_identical_exports(
    coded_study, tmp_path, settings, fresh_database_url
):
    source, fresh, backups = tmp_path / "source", tmp_path / "fresh", tmp_path / "backups"
    (source / "media" / "uploads").mkdir(parents=True)
    (source / "secret_key").write_text("source-install-key-" + uuid.uuid4().hex)
    (source / "media" / "uploads" / "toolkit.json").write_bytes(b'{"items": []}\n')
    settings.EXPORT_ROOT = source / "exports"
    admin = coded_study["roles"]["users"]["admin"]
    job = services.create_job(coded_study["study"], fmt="csv", actor=admin)
    assert job.status == "completed", job.message
    bundle = services.job_path(job)
    (bundle.parent / "half-written.zip.part").write_bytes(b"not finished")  # a file being written: left out

    source_env = child_env(subprocess_database_url(), source)
    before = digests(source_env)
    study = coded_study["study"].pk
    assert {f"{study}/csv", f"{study}/jsonl", f"{study}/qdpx"} <= set(before)
    assert {"codings.csv", "verdicts.csv", "memos.csv"} <= set(before[f"{study}/csv"])

    done = run(source_env, "manage.py", "backup", "--output-dir", str(backups))
    assert "Backup written" in done.stdout
    (archive,) = backups.glob("stereoscope-backup-*.tar.gz")
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        names = set(tar.getnames())
    assert manifest["database"]["vendor"] == connection.vendor
    assert manifest["database"]["migrations"]["stereoscope"]
    listed = {entry["path"] for entry in manifest["files"]}
    assert names == listed | {"manifest.json"}
    assert {"secret_key", "media/uploads/toolkit.json", f"exports/study-{study}/{job.file_name}"} <= listed
    assert manifest["database"]["member"] in listed
    assert not any(name.endswith(".part") for name in names)
    assert all(len(entry["sha256"]) == 64 for entry in manifest["files"])

    fresh_env = child_env(fresh_database_url, fresh)
    done = run(fresh_env, "manage.py", "restore", str(archive))
    assert "Restored the backup" in done.stdout, done.stdout
    assert (fresh / "secret_key").read_bytes() == (source / "secret_key").read_bytes()
    assert (fresh / "media" / "uploads" / "toolkit.json").read_bytes() == b'{"items": []}\n'
    assert (fresh / "exports" / f"study-{study}" / job.file_name).read_bytes() == bundle.read_bytes()
    assert digests(fresh_env) == before

    # the restored install holds work now: a second restore is refused and changes nothing ...
    (fresh / "secret_key").write_text("a key of its own")
    refused = run(fresh_env, "manage.py", "restore", str(archive), check=False)
    assert refused.returncode != 0
    assert "not empty" in refused.stderr and "studies" in refused.stderr and "--force" in refused.stderr
    assert (fresh / "secret_key").read_text() == "a key of its own"
    # ... unless told otherwise
    run(fresh_env, "manage.py", "restore", str(archive), "--force")
    assert (fresh / "secret_key").read_bytes() == (source / "secret_key").read_bytes()


def test_a_damaged_archive_is_refused_before_anything_changes(gen_study, tmp_path):
    from stereoscope.backup import BackupError, create_backup, read_archive

    path, manifest = create_backup(tmp_path / "backups")
    assert read_archive(path)["files"] == manifest["files"]
    damaged = tmp_path / "damaged.tar.gz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(BackupError, match="damaged"):
        read_archive(damaged)
    # a member changed after the backup (a whole, readable archive): its checksum gives it away
    altered = tmp_path / "altered.tar.gz"
    with tarfile.open(path) as src, tarfile.open(altered, "w:gz") as dst:
        for info in src:
            data = src.extractfile(info).read()
            if info.name == manifest["database"]["member"]:
                data = data[:-1] + bytes([data[-1] ^ 1])
            dst.addfile(info, io.BytesIO(data))
    with pytest.raises(BackupError, match="does not match its checksum"):
        read_archive(altered)
    with pytest.raises(BackupError, match="not a Stereoscope backup"):
        stray = tmp_path / "stray.tar.gz"
        with tarfile.open(stray, "w:gz") as tar:
            tar.add(Path(__file__), "notes.txt")
        read_archive(stray)


def test_keep_deletes_all_but_the_newest_archives(gen_study, tmp_path):
    from django.core.management import call_command

    for _ in range(3):
        call_command("backup", output_dir=str(tmp_path), keep=2)
    assert len(list(tmp_path.glob("stereoscope-backup-*.tar.gz"))) == 2
