import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Analyse questionnaire responses collected anywhere (also human data): a wide CSV (one row per respondent, "
        "one column per item id, optional `group`) against an instrument JSON file. Prints JSON with n, "
        "descriptives, items, alpha, stratified_alpha, omega_total, cfa (ML, scaled and robust indices), ratings and "
        "notes; with `group`, per-group figures and "
        "between-group tests (Welch t for two groups, one-way ANOVA otherwise, with effect sizes)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--instrument", required=True, help="Instrument JSON file.")
        parser.add_argument("--responses", required=True, help="Wide CSV file.")
        parser.add_argument("--format", choices=["json"], default="json")
        parser.add_argument("--no-cfa", action="store_true", help="Skip the CFA (faster).")

    def handle(self, *args, instrument, responses, no_cfa=False, **options):
        import pandas as pd

        from psychometrics.analysis import analyze, read_wide_csv, sanitize
        from psychometrics.group_tests import between_groups
        from psychometrics.scoring import score, score_names
        from psychometrics.spec import SpecError, parse_instrument

        try:
            data = json.loads(Path(instrument).read_text(encoding="utf-8"))
        except OSError as exc:
            raise CommandError(f"Cannot read the instrument file: {exc}") from exc
        except ValueError as exc:
            raise CommandError(f"The instrument file is not valid JSON: {exc}") from exc
        try:
            spec = parse_instrument(data)
        except SpecError as exc:
            raise CommandError(f"Invalid instrument: {exc}") from exc
        try:
            wide, group = read_wide_csv(responses, spec)
        except FileNotFoundError as exc:
            raise CommandError(f"Cannot read the responses file: {exc}") from exc
        except (ValueError, pd.errors.ParserError) as exc:
            raise CommandError(f"Invalid responses CSV: {exc}") from exc
        if wide.empty:
            raise CommandError("The responses CSV has a header but no rows: nothing to analyse.")
        report = analyze(wide, spec, cfa=not no_cfa, histograms=False)
        out = {key: report[key] for key in ("n", "descriptives", "items", "alpha", "stratified_alpha", "omega_total")}
        cfa = report["cfa"] or {}
        out["cfa"] = {
            k: cfa.get(k)
            for k in (
                "chi2",
                "df",
                "p",
                "cfi",
                "tli",
                "rmsea",
                "rmsea_ci_low",
                "rmsea_ci_high",
                "srmr",
                "chi2_scaled",
                "p_scaled",
                "scaling_factor",
                "cfi_scaled",
                "tli_scaled",
                "cfi_robust",
                "tli_robust",
                "rmsea_robust",
                "improper",
                "boundary",
                "boundary_estimates",
                "residual_variances",
                "loadings",
                "estimator",
                "n",
            )
        }
        out["ratings"] = report["ratings"]
        out["omega"] = report["omega"]
        out["missing"] = report["missing"]
        out["notes"] = list(report["notes"])
        if group is not None:
            out["groups"] = {}
            for name in sorted(set(group)):
                mask = (group == name).to_numpy()
                sub = analyze(wide[mask].reset_index(drop=True), spec, cfa=False, histograms=False)
                out["groups"][name] = {
                    "n": sub["n"],
                    "descriptives": sub["descriptives"],
                    "alpha": sub["alpha"],
                    "stratified_alpha": sub["stratified_alpha"],
                }
            scores = score(wide.astype(float), spec)
            labels = group.to_numpy()
            out["between_groups"] = {
                name: between_groups({g: scores[name][labels == g] for g in sorted(set(labels))})
                for name in score_names(spec)
                if name in scores
            }
        for key in ("stratified_alpha", "omega_total"):
            if out[key] is None and not any(key.replace("_", " ").split()[0] in n.lower() for n in out["notes"]):
                out["notes"].append(f"{key} is undefined for these data.")
        self.stdout.write(json.dumps(sanitize(out), indent=2, allow_nan=False))
