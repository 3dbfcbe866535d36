"""R.U.Psycho experiment files as recipes. Django-free.

An R.U.Psycho experiment (JSON or YAML) holds: `name`; `questionnaire` {name, instruction, items [{id, text,
reversed, dimension}], default_answer_options [{text, weight}]}; `personas` {format: "{title} {surname}",
attributes: {title: [...], surname: [...]}} (or a list of persona texts); `prompt_template` {system, user} with
{persona}, {question}, {answer_options} (and {instruction}); `models` [{name, backend, model_id, connection,
parameters}] (a base_url or api_key_env is left out: connections decide hosts and keys); `seeds` [...]. The grid
model × seed × persona × item becomes one questionnaire run with a seed grid (one repetition per seed, the seed
passed to the model); items may carry their own answer options.

`prompt_template` may also be a list of templates, R.U.Psycho's prompt variants (natural, friendly, JSON), each with
an optional `name`: they import as one questionnaire run per variant over the same grid.
"""

from .loader import FORMAT, FORMAT_VERSION, RecipeError, RecipeProblem

BACKENDS = {
    "openai": "openai",
    "openai_compatible": "openai_compatible",
    "vllm": "openai_compatible",
    "ollama": "openai_compatible",
    "huggingface": "transformers",
    "local": "transformers",
    "transformers": "transformers",
    "anthropic": "anthropic",
}
PARAMETERS = {
    "max_new_tokens": "max_tokens",
    "max_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "stop": "stop",
    "seed": "seed",
}
PLACEHOLDERS = {
    "{question}": "{statement}",
    "{answer_options}": "{options}",
    "{persona}": "{persona}",
    "{instruction}": "{instruction}",
}


def _template(text):
    for theirs, ours in PLACEHOLDERS.items():
        text = text.replace(theirs, ours)
    return text


def _require(data, key, kind, problems, where=""):
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kind) or not value:
        problems.append(RecipeProblem(f"{where}{key}", f"required ({kind.__name__ if kind is not tuple else 'value'})"))
        return kind()
    return value


def _instrument(q, problems):
    options = _require(q, "default_answer_options", list, problems, "questionnaire.")
    labels = {}
    for i, option in enumerate(options):
        weight = option.get("weight") if isinstance(option, dict) else None
        if not isinstance(weight, int) or isinstance(weight, bool):
            problems.append(RecipeProblem(f"questionnaire.default_answer_options[{i}].weight", "a whole number"))
            continue
        labels[weight] = str(option.get("text", ""))
    if labels and sorted(labels) != list(range(min(labels), max(labels) + 1)):
        problems.append(
            RecipeProblem(
                "questionnaire.default_answer_options", "the weights must be consecutive whole numbers (a Likert scale)"
            )
        )
    items, dimensions = [], []
    for i, item in enumerate(_require(q, "items", list, problems, "questionnaire.")):
        if not isinstance(item, dict) or not str(item.get("text", "")).strip():
            problems.append(RecipeProblem(f"questionnaire.items[{i}].text", "required"))
            continue
        dimension = str(item.get("dimension") or "all")
        dimensions += [dimension] if dimension not in dimensions else []
        items.append(
            {
                "id": str(item.get("id", i + 1)),
                "text": item["text"],
                "subscale": dimension,
                "reverse": bool(item.get("reversed", False)),
                # an item's own answer options (with weights), when they differ from the default ones
                **({"options": item["answer_options"]} if item.get("answer_options") not in (None, options) else {}),
            }
        )
    return {
        "name": q.get("name") or "Questionnaire",
        "version": "1",
        "instruction": q.get("instruction", ""),
        "scale": {
            "min": min(labels, default=0),
            "max": max(labels, default=1),
            "labels": {str(k): v for k, v in sorted(labels.items())},
        },
        "subscales": dimensions,
        "items": items,
    }


def _contexts(personas, problems):
    if isinstance(personas, list):
        return {"contexts": [{"key": str(i + 1), "persona": str(p)} for i, p in enumerate(personas)]}
    template = _require(personas, "format", str, problems, "personas.")
    attributes = _require(personas, "attributes", dict, problems, "personas.")
    return {"grid": {"template": template, "attributes": attributes}}


def _endpoint(model, i, problems):
    where = f"models[{i}]."
    backend = model.get("backend", "openai_compatible") if isinstance(model, dict) else None
    if backend not in BACKENDS:
        problems.append(RecipeProblem(f"{where}backend", f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}"))
        backend = "openai_compatible"
    model_id = _require(model, "model_id", str, problems, where) if isinstance(model, dict) else ""
    params = {}
    for key, value in ((model or {}).get("parameters") or {}).items():
        if key not in PARAMETERS:
            problems.append(
                RecipeProblem(f"{where}parameters.{key}", f"unknown parameter; known: {', '.join(PARAMETERS)}")
            )
            continue
        params[PARAMETERS[key]] = value
    entry = {
        "name": str((model or {}).get("name") or model_id or f"model-{i + 1}"),
        "provider": BACKENDS[backend],
        "model_id": model_id,
        "params": params,
    }
    if (model or {}).get("connection"):
        entry["connection"] = str(model["connection"])
    # A model's base_url or api_key_env is not carried over: on this installation the provider connection that
    # staff approved decides the host and the key (apply picks the study's one connection of this provider).
    return entry


def _prompt_variants(value, problems):
    """[(variant name or None, {system, user})]: one template, or a list of prompt variants (R.U.Psycho's natural,
    friendly and JSON prompts), each named by its "name" or numbered."""
    if isinstance(value, dict) and value:
        entries, listed = [value], False
    elif isinstance(value, list) and value:
        entries, listed = value, True
    else:
        problems.append(RecipeProblem("prompt_template", "required (a {system, user} mapping or a list of them)"))
        return []
    variants, names = [], set()
    for i, prompt in enumerate(entries):
        where = f"prompt_template[{i}]" if listed else "prompt_template"
        if not isinstance(prompt, dict):
            problems.append(RecipeProblem(where, "a mapping with system and user"))
            continue
        if "{statement}" not in _template(str(prompt.get("user", ""))):
            problems.append(RecipeProblem(f"{where}.user", "must contain {question}"))
        name = str(prompt.get("name") or f"variant {i + 1}") if listed else None
        if name in names:
            problems.append(RecipeProblem(f"{where}.name", f"the variant name {name!r} is used twice"))
        names.add(name)
        variants.append((name, prompt))
    return variants


def to_recipe(experiment):
    """The recipe of an R.U.Psycho experiment; raises RecipeError naming every problem with its path."""
    if not isinstance(experiment, dict):
        raise RecipeError([RecipeProblem("", "An R.U.Psycho experiment is a mapping (questionnaire, personas, …).")])
    problems = []
    instrument = _instrument(_require(experiment, "questionnaire", dict, problems), problems)
    contexts = _contexts(experiment.get("personas"), problems) if experiment.get("personas") else {}
    variants = _prompt_variants(experiment.get("prompt_template"), problems)
    endpoints = [_endpoint(m, i, problems) for i, m in enumerate(_require(experiment, "models", list, problems))]
    seeds = experiment.get("seeds") or [0]
    if isinstance(seeds, list) and len(set(map(str, seeds))) != len(seeds):
        problems.append(RecipeProblem("seeds", "each seed once"))
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        problems.append(RecipeProblem("seeds", "a list of whole numbers"))
        seeds = []
    if problems:
        raise RecipeError(problems)
    name = str(experiment.get("name") or "R.U.Psycho experiment")
    context_set = {"name": "Personas", **contexts}
    questionnaire_runs = []
    for variant, prompt in variants:
        run = {
            # one run per prompt variant, each over the same grid
            "name": name if variant is None else f"{name} — {variant}",
            "instrument": instrument["name"],
            "endpoints": [e["name"] for e in endpoints],
            "seeds": seeds,  # one repetition per seed: the grid model × seed × persona × item
            "template": {
                "key": "custom",
                "user": _template(str(prompt.get("user", ""))),
                "system": _template(str(prompt.get("system", ""))),
                "option_format": "comma",
            },
            "options": {"order": "fixed", "seed": 0},
        }
        if experiment.get("personas"):
            run["context_set"] = "Personas"
        questionnaire_runs.append(run)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "study": {"name": name, "description": "Imported from an R.U.Psycho experiment file."},
        "instruments": [instrument],
        "context_sets": [context_set] if experiment.get("personas") else [],
        "endpoints": endpoints,
        "questionnaire_runs": questionnaire_runs,
    }
