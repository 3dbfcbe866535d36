from django.core.management.base import BaseCommand, CommandError

from stereoscope.backup import BackupError, restore_backup


class Command(BaseCommand):
    help = (
        "Restore an archive written by `manage.py backup` into this install: it checks every checksum first, refuses "
        "an install that holds work (studies, accounts, files) unless --force, then migrates the database."
    )

    def add_arguments(self, parser):
        parser.add_argument("archive", help="The .tar.gz archive to restore.")
        parser.add_argument(
            "--force", action="store_true", help="Restore even though this install is not empty (replaces its data)."
        )

    def handle(self, *args, archive, force=False, **options):
        try:
            summary = restore_backup(archive, force=force)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Restored the backup of {summary['created_at']}: the {summary['vendor']} database, "
            f"{summary['media_files']} uploaded files and {summary['export_files']} export files"
            + (", and the secret key file" if summary["secret_key"] == "file" else "")
            + ". Restart the web server and the workers so they read the restored key and data."
        )
