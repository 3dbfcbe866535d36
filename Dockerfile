FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 STEREOSCOPE_DATA_DIR=/data
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir -c requirements.lock . && python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "stereoscope.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4"]
