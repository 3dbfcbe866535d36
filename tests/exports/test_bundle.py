import csv
import io
import json
import zipfile

import pandas as pd
import pytest

from exports import services
from exports.models import ExportJob
from exports.services import ExportError, clean_options, write_export


def read_zip(path):
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def test_csv_bundle_has_outputs_dictionary_and_manifest(gen_study, tmp_path):
    study = gen_study["study"]
    path = tmp_path / "out.zip"
    manifest = write_export(study, "csv", path, dataset_keys=["outputs"])
    files = read_zip(path)
    assert set(files) == {"outputs.csv", "data_dictionary.csv", "manifest.json"}
    frame = pd.read_csv(io.BytesIO(files["outputs.csv"]))
    assert len(frame) == 6
    assert set(frame["model"]) == {"gpt-4o", "claude-x"}
    assert frame.loc[frame["item_number"] == 1, "dimension"].tolist() == ["Leadership", "Leadership"]
    assert frame["text"].iloc[0].startswith("Story 1 by")
    stored = json.loads(files["manifest.json"])
    assert stored == json.loads(json.dumps(manifest))
    assert stored["row_counts"] == {"outputs": 6}
    assert stored["study"]["name"] == "Study A"
    assert stored["software"]["version"]
    run = stored["generation_runs"][0]
    assert run["trials"] == 1 and run["param_overrides"] == {"temperature": 0.5}
    assert run["toolkit"] == {
        "id": gen_study["toolkit"].pk,
        "name": "Fang toolkit",
        "version": 2,
        "study_id": study.pk,
        "builtin_key": "",
    }
    gpt = next(e for e in run["endpoints"] if e["name"] == "gpt")
    assert gpt["effective_params"] == {"temperature": 0.5, "seed": 3}
    assert gpt["model_id"] == "gpt-4o" and "api_key_env" not in gpt
    assert stored["versions"]["generation.toolkit"][0]["version"] == 2
    outputs_file = next(f for f in stored["files"] if f["path"] == "outputs.csv")
    import hashlib

    assert outputs_file["sha256"] == hashlib.sha256(files["outputs.csv"]).hexdigest()
    dictionary = list(csv.DictReader(io.StringIO(files["data_dictionary.csv"].decode())))
    assert [d["column"] for d in dictionary] == list(frame.columns)
    assert all(d["description"] for d in dictionary)


def test_jsonl_and_xlsx_bundles(gen_study, tmp_path):
    study = gen_study["study"]
    write_export(study, "jsonl", tmp_path / "j.zip", dataset_keys=["outputs"], options={"models": ["gpt-4o"]})
    lines = read_zip(tmp_path / "j.zip")["outputs.jsonl"].decode().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["model"] for r in rows] == ["gpt-4o"] * 3
    assert rows[0]["slot_values"] == {} and rows[0]["params"] == {"temperature": 0.5}

    write_export(study, "xlsx", tmp_path / "x.zip", dataset_keys=["outputs"], options={"item_numbers": [2]})
    files = read_zip(tmp_path / "x.zip")
    book = pd.read_excel(io.BytesIO(files["study-a.xlsx"]), sheet_name=None)
    assert set(book) == {"outputs", "data_dictionary"}
    assert book["outputs"]["item_number"].tolist() == [2, 2]
    assert json.loads(files["manifest.json"])["export"]["options"]["item_numbers"] == [2]


def test_filters_validate_against_the_study(gen_study, roles):
    study = gen_study["study"]
    with pytest.raises(ExportError, match="No generation run with id 999"):
        clean_options(study, {"run_ids": [999]})
    with pytest.raises(ExportError, match="not a whole number"):
        clean_options(study, {"item_numbers": ["one"]})
    with pytest.raises(ExportError, match="No outputs from model nope"):
        clean_options(study, {"models": "nope"})
    with pytest.raises(ExportError, match="Unknown options: colour"):
        clean_options(study, {"colour": 1})
    with pytest.raises(ExportError, match="Unknown format"):
        write_export(study, "pdf", "/tmp/x")
    with pytest.raises(ExportError, match="Unknown dataset nope"):
        services.resolve_datasets(study, ["nope"])
    assert clean_options(study, {"run_ids": f"{gen_study['run'].pk}", "pseudonymise": "true"})["pseudonymise"] is True


def test_failed_write_leaves_no_file(gen_study, tmp_path, monkeypatch):
    from stereoscope import datasets as registry

    def broken(study, options):
        yield {"output_id": 1}
        raise RuntimeError("database went away")

    ds = registry.get_dataset("outputs")
    monkeypatch.setitem(registry._registry, "outputs", ds.__class__(**{**ds.__dict__, "rows": broken}))
    with pytest.raises(RuntimeError):
        write_export(gen_study["study"], "csv", tmp_path / "o.zip", dataset_keys=["outputs"])
    assert list(tmp_path.iterdir()) == []


def test_pseudonyms_are_stable_and_distinct(gen_study):
    study = gen_study["study"]
    users = gen_study["roles"]["users"]
    first, second = services.pseudonymiser(study), services.pseudonymiser(study)
    assert first(users["coder"]) == second(users["coder"].pk)
    assert first(users["coder"]) != first(users["admin"])
    assert users["coder"].username not in first(users["coder"])


def test_job_runs_and_is_idempotent(gen_study, export_root):
    study = gen_study["study"]
    admin = gen_study["roles"]["users"]["admin"]
    job = services.create_job(study, fmt="csv", dataset_keys=["outputs"], actor=admin)
    assert job.status == "completed", job.message
    assert job.manifest["row_counts"] == {"outputs": 6}
    assert job.progress["percent"] == 100
    path = services.job_path(job)
    assert path.exists() and path.stat().st_size == job.size_bytes
    assert not list(path.parent.glob("*.part"))
    assert services.execute_job(job.pk) is None  # a finished job is left alone
    assert ExportJob.objects.get(pk=job.pk).file_name == job.file_name


def test_job_failure_is_recorded(gen_study, export_root, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(services, "write_table_bundle", boom)
    job = services.create_job(gen_study["study"], fmt="csv", dataset_keys=["outputs"])
    assert job.status == "failed" and "disk full" in job.message


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "xlsx"])
def test_every_registered_dataset_exports(coded_study, tmp_path, fmt):
    """The default export (every dataset of every app) works on a coded, judged study."""
    from stereoscope.datasets import datasets

    study = coded_study["study"]
    manifest = write_export(study, fmt, tmp_path / "all.zip", options={"pseudonymise": True})
    assert set(manifest["row_counts"]) == set(datasets())
    assert manifest["row_counts"]["codings"] == 5 and manifest["row_counts"]["outputs"] == 6
    assert manifest["row_counts"]["verdicts"] == 6
    judge_round = manifest["judge_rounds"][0]
    assert judge_round["template_version"] == {
        "id": judge_round["template_id"],
        "name": "Seed judge",
        "version": 1,
        "study_id": study.pk,
    }
    assert {j["model_id"] for j in judge_round["judges"]} == {"gpt-4o", "claude-x"}
    assert manifest["versions"]["annotation.codebook"][0]["name"] == "Fang codes"
    names = read_zip(tmp_path / "all.zip")
    if fmt != "xlsx":
        assert {f"{key}.{fmt}" for key in datasets()} <= set(names)
        everything = b"".join(names.values())
        assert b"second_coder" not in everything  # pseudonymised everywhere


def test_a_held_job_is_not_run_twice(gen_study, export_root):
    """Its unit is leased by another (live) worker: this one leaves it; once that lease expires, it takes it over."""
    from datetime import timedelta

    from django.utils import timezone

    from stereoscope.jobs import ChunkSource, JobChunk

    job = services.create_job(gen_study["study"], fmt="csv", dataset_keys=["outputs"], enqueue=False)
    assert job.status == "queued"
    held = ChunkSource(services.EXPORT_JOB, job, "other-worker", lambda: False).take()
    assert [u.key for u in held] == ["outputs"]
    assert services.execute_job(job.pk) is None
    job.refresh_from_db()
    assert job.status == "queued" and not job.file_name and not services.staging_dir(job).exists()
    JobChunk.objects.filter(lease_token="other-worker").update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert services.execute_job(job.pk)  # the other worker died
    job.refresh_from_db()
    assert job.status == "completed" and job.lease_token == "" and services.job_path(job).exists()
    assert not services.staging_dir(job).exists()
