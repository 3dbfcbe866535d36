from django.core.management.base import BaseCommand

from stereoscope.builtin import all_specs, load_builtins


class Command(BaseCommand):
    help = (
        "Load the built-in toolkits, codebooks, instruments and lexicons (idempotent; new versions go beside old ones)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--list", action="store_true", help="List the built-ins and exit.")

    def handle(self, *args, list=False, **options):
        specs = all_specs()
        if list:
            for spec in specs:
                self.stdout.write(f"{spec.kind:12} {spec.key:32} v{spec.version}  {spec.path}")
            return
        created = load_builtins(specs, log=lambda line: self.stdout.write(line))
        self.stdout.write(
            self.style.SUCCESS(f"{len(created)} built-in(s) loaded, {len(specs) - len(created)} already present.")
        )
