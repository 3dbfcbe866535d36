.PHONY: run test lint test-postgres worker beat migrate builtin bench

run:            ## set up and start the platform on the embedded default (SQLite, filesystem broker, one worker)
	scripts/run.sh

test:           ## run the whole test suite
	scripts/test.sh

test-postgres:  ## the suite on PostgreSQL + Redis (servers on 127.0.0.1)
	DATABASE_URL=postgres://postgres@127.0.0.1:5432/stereoscope CELERY_BROKER_URL=redis://127.0.0.1:6379/0 scripts/test.sh

worker:         ## one more Celery worker (set CELERY_BROKER_URL to share work across machines)
	.venv/bin/celery -A stereoscope worker --loglevel INFO

beat:           ## Celery beat: periodic tasks (polling open provider batches); run exactly one beside the workers
	.venv/bin/celery -A stereoscope beat --loglevel INFO

migrate:
	.venv/bin/python manage.py migrate

builtin:
	.venv/bin/python manage.py load_builtin

lint:           ## ruff (pyflakes, pycodestyle, bugbear, import order, line length), ruff format, mypy, the complexity gate
	scripts/setup_venv.sh test
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	.venv/bin/python scripts/complexity_gate.py
