#!/usr/bin/env python
import os
import sys


def main():
    if sys.argv[1:2] == ["agreement"]:
        # a file's agreement needs no database: run it before Django starts (agreement/cli.py says when it does)
        from agreement.cli import run_without_django  # lazy: only this command needs it

        if run_without_django(sys.argv[2:]):
            return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
