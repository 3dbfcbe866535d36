from django.core.management.base import BaseCommand, CommandError

from stereoscope.backup import BackupError, backup_root, create_backup, prune


class Command(BaseCommand):
    help = (
        "Write a dated archive of this install: the database (a consistent snapshot), the secret key file, uploaded "
        "files and export bundles, with a manifest of checksums. `--keep N` then deletes all but the N newest."
    )

    def add_arguments(self, parser):
        parser.add_argument("--output-dir", help="Where to write the archive (default: BACKUP_ROOT or <data>/backups).")
        parser.add_argument("--keep", type=int, default=None, help="Keep only the N newest archives in that folder.")

    def handle(self, *args, output_dir=None, keep=None, **options):
        if keep is not None and keep < 1:
            raise CommandError("--keep must be 1 or more.")
        try:
            path, manifest = create_backup(output_dir)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        size = path.stat().st_size
        self.stdout.write(
            f"Backup written: {path} ({size} bytes; {manifest['database']['vendor']} database, "
            f"{len(manifest['files'])} files with checksums)"
        )
        for old in prune(output_dir or backup_root(), keep):
            self.stdout.write(f"Deleted old backup {old.name}")
