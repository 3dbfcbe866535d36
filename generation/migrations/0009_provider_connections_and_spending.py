"""Provider connections: the operator decides where keys go. Every endpoint's (provider, base URL, key variable)
becomes a connection: a triple on the provider's official host (or a keyless local backend) is approved; any other
host waits for staff approval, and runs on it wait with that reason. Then the endpoints lose their own base URL and
key variable."""

from urllib.parse import urlsplit

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
KIND_NAMES = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "openai_compatible": "OpenAI-compatible",
    "transformers": "Local transformers",
    "manual": "Manual entry",
}


def classify(provider, base_url, key):
    """(name, approved, reason) of the connection an endpoint's triple becomes."""
    host = (urlsplit(base_url).hostname or "") if base_url else ""
    kind = KIND_NAMES.get(provider, provider)
    if provider in ("manual", "transformers"):
        return kind, True, ""
    if provider in OFFICIAL_HOSTS and (not base_url or host == OFFICIAL_HOSTS[provider]):
        return (f"{kind} ({key})" if key else kind), True, ""
    name = f"{kind} at {host or base_url or 'no host'}" + (f" ({key})" if key else "")
    reason = (
        f"Made from existing endpoints that send {'the key in ' + key if key else 'requests'} to {base_url or 'no host'}: "
        "staff must approve this host before any run uses it."
    )
    return name, False, reason


def endpoints_to_connections(apps, schema_editor):
    ModelEndpoint = apps.get_model("generation", "ModelEndpoint")
    ProviderConnection = apps.get_model("generation", "ProviderConnection")
    made = {}
    for endpoint in ModelEndpoint.objects.order_by("pk"):
        base_url = (endpoint.base_url or "").strip()
        key = (endpoint.api_key_env or "").strip()
        if endpoint.provider in ("manual", "transformers"):
            base_url, key = "", ""
        triple = (endpoint.provider, base_url, key)
        if triple not in made:
            name, approved, reason = classify(*triple)
            unique, n = name[:190], 2
            while ProviderConnection.objects.filter(name=unique).exists():
                unique, n = f"{name[:190]} #{n}", n + 1
            made[triple] = ProviderConnection.objects.create(
                name=unique,
                provider=endpoint.provider,
                base_url=base_url,
                api_key_env=key,
                status="approved" if approved else "pending",
                status_reason=reason,
            )
        endpoint.connection = made[triple]
        endpoint.save(update_fields=["connection"])


def connections_to_endpoints(apps, schema_editor):
    ModelEndpoint = apps.get_model("generation", "ModelEndpoint")
    for endpoint in ModelEndpoint.objects.exclude(connection=None).select_related("connection"):
        endpoint.base_url = endpoint.connection.base_url
        endpoint.api_key_env = endpoint.connection.api_key_env
        endpoint.save(update_fields=["base_url", "api_key_env"])


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0008_batch_mode_endpoints_runs_batches"),
        ("stereoscope", "0005_study_spending_caps"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="generationrun",
            name="status",
            field=models.CharField(
                choices=[
                    ("draft", "Draft"),
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("waiting", "Waiting"),
                    ("completed", "Completed"),
                    ("cancelled", "Cancelled"),
                    ("failed", "Failed"),
                ],
                default="draft",
                max_length=20,
            ),
        ),
        migrations.CreateModel(
            name="ProviderConnection",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=200, unique=True)),
                (
                    "provider",
                    models.CharField(
                        choices=[
                            ("openai", "OpenAI"),
                            ("openai_compatible", "OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio)"),
                            ("anthropic", "Anthropic"),
                            ("transformers", "Local Hugging Face transformers"),
                            ("manual", "Manual (pasted from a chat interface)"),
                        ],
                        max_length=30,
                    ),
                ),
                (
                    "base_url",
                    models.URLField(
                        blank=True,
                        help_text="Empty: the provider's official host (OpenAI, Anthropic). Fixed for every endpoint.",
                    ),
                ),
                (
                    "api_key_env",
                    models.CharField(
                        blank=True,
                        help_text="The NAME of the environment variable holding the key (one of PROVIDER_KEY_VARIABLES); empty for keyless local servers.",
                        max_length=100,
                    ),
                ),
                (
                    "allowed_models",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="Model ids endpoints may use on this connection; empty: any.",
                    ),
                ),
                (
                    "max_concurrency",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="At most this many calls at once over every endpoint of the connection.",
                        null=True,
                    ),
                ),
                ("requests_per_minute", models.PositiveIntegerField(blank=True, null=True)),
                ("tokens_per_minute", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "all_studies",
                    models.BooleanField(default=True, help_text="Open to every study (else only to those chosen)."),
                ),
                (
                    "monthly_cap_usd",
                    models.DecimalField(
                        blank=True,
                        decimal_places=2,
                        help_text="USD per calendar month (UTC) over all studies; empty: no cap.",
                        max_digits=12,
                        null=True,
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[("approved", "Approved"), ("pending", "Pending approval by staff")],
                        default="pending",
                        max_length=20,
                    ),
                ),
                ("status_reason", models.CharField(blank=True, help_text="Why it waits for approval.", max_length=500)),
                ("approved_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "approved_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "studies",
                    models.ManyToManyField(blank=True, related_name="provider_connections", to="stereoscope.study"),
                ),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.AddField(
            model_name="modelendpoint",
            name="connection",
            field=models.ForeignKey(
                blank=True,
                help_text="Where calls go and with which key: chosen among the connections staff approved.",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="endpoints",
                to="generation.providerconnection",
            ),
        ),
        migrations.CreateModel(
            name="SpendingLedger",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("month", models.DateField(help_text="The first day of the month.")),
                ("calls", models.IntegerField(default=0)),
                ("input_tokens", models.BigIntegerField(default=0)),
                ("output_tokens", models.BigIntegerField(default=0)),
                ("cost_usd", models.DecimalField(decimal_places=6, default=0, max_digits=16)),
                ("reserved_usd", models.DecimalField(decimal_places=6, default=0, max_digits=16)),
                (
                    "connection",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="spending",
                        to="generation.providerconnection",
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="spending", to="stereoscope.study"
                    ),
                ),
            ],
            options={
                "ordering": ["study", "month", "connection"],
                "constraints": [
                    models.UniqueConstraint(fields=("study", "connection", "month"), name="unique_spending_month")
                ],
            },
        ),
        migrations.RunPython(endpoints_to_connections, connections_to_endpoints),
        migrations.RemoveField(
            model_name="modelendpoint",
            name="api_key_env",
        ),
        migrations.RemoveField(
            model_name="modelendpoint",
            name="base_url",
        ),
    ]
