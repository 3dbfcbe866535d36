"""manage.py import_refi <study-id> PATH [--user NAME]: import a REFI-QDA .qdpx project or .qdc codebook."""
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation import refi_qda
from annotation.refi_services import import_file
from stereoscope.models import Study


class Command(BaseCommand):
    help = "Import a REFI-QDA .qdpx project or .qdc codebook into a study (checked whole first; all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("study_id", type=int)
        parser.add_argument("path")
        parser.add_argument("--user", help="Username to attribute codings without a creatingUser to.")

    def handle(self, *args, **opts):
        study = Study.objects.filter(pk=opts["study_id"]).first()
        if study is None:
            raise CommandError(f"No study with id {opts['study_id']}.")
        path = Path(opts["path"])
        if not path.is_file():
            raise CommandError(f"No file {path}.")
        actor = None
        if opts["user"]:
            actor = get_user_model().objects.filter(username=opts["user"]).first()
            if actor is None:
                raise CommandError(f"No user named {opts['user']!r}.")
        try:
            report = import_file(study, path.read_bytes(), filename=path.name, actor=actor)
        except refi_qda.RefiError as exc:
            raise CommandError(f"Nothing was imported: {exc}") from exc
        self.stdout.write(self.style.SUCCESS(", ".join(f"{k}={v}" for k, v in report.items())))
