FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 STEREOSCOPE_DATA_DIR=/data
WORKDIR /app
# pg_dump / pg_restore for `manage.py backup` and `restore` on PostgreSQL
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-client \
    && rm -rf /var/lib/apt/lists/*
COPY . .
# gcc compiles the text scanner (stereoscope/stats/_textscan.c), then leaves the image
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install --no-cache-dir -c requirements.lock . && python manage.py collectstatic --noinput \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
EXPOSE 8000
CMD ["gunicorn", "stereoscope.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4"]
