"""The project's Django apps, in dependency order: written here once and read by the settings and the architecture
tests (a name, not an import: the project package imports no app)."""

PROJECT_APPS = (
    "generation",
    "annotation",
    "judging",
    "agreement",
    "psychometrics",
    "measures",
    "exports",
    "recipes",
    "reports",
)
