"""Purge the trash: delete for good the studies trashed longer ago than settings.TRASH_RETENTION_DAYS (run it
daily from cron or a scheduler). `--study ID` or `--all` purge earlier (site staff's decision). A study with a
live job is left for the next run, and said so."""

from django.core.management.base import BaseCommand, CommandError

from stereoscope import trash


class Command(BaseCommand):
    help = "Delete for good the studies in the trash past the retention period (TRASH_RETENTION_DAYS)."

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, action="append", default=[], help="Purge this trashed study now.")
        parser.add_argument("--all", action="store_true", help="Purge every study in the trash, whatever its age.")
        parser.add_argument("--dry-run", action="store_true", help="Only list what would be purged.")

    def handle(self, *args, study, all, dry_run, **options):
        if study:
            chosen = list(trash.trashed_studies().filter(pk__in=study))
            missing = sorted(set(study) - {s.pk for s in chosen})
            if missing:
                raise CommandError(f"Not in the trash: {', '.join(map(str, missing))}.")
        elif all:
            chosen = list(trash.trashed_studies())
        else:
            chosen = list(trash.expired())
        if dry_run:
            for s in chosen:
                self.stdout.write(f"would purge study {s.pk} {s.name!r} (trashed {s.trashed_at:%Y-%m-%d %H:%M})")
            return
        purged = refused = 0
        for s in chosen:
            try:
                trash.purge_study(s)
            except trash.TrashError as exc:
                refused += 1
                self.stderr.write(f"study {s.pk} {s.name!r} kept: {exc}")
                continue
            purged += 1
            self.stdout.write(f"purged study {s.pk} {s.name!r}")
        self.stdout.write(f"{purged} purged, {refused} kept (retention {trash.retention_days():g} days).")
        if refused and study:
            raise CommandError("Some studies could not be purged.")
