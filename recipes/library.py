"""Built-in recipes for the seed studies (recipes/builtin_recipes/*.yaml), each ready to `plan` against the
endpoints the user names: `with_endpoints` puts the user's endpoints in place of the recipe's example ones."""

from pathlib import Path

from .loader import RecipeError, RecipeProblem, parse_text

DIRECTORY = Path(__file__).resolve().parent / "builtin_recipes"
JOB_ENDPOINTS = (("runs", "endpoints"), ("questionnaire_runs", "endpoints"), ("judge_rounds", "judges"))


def names():
    return sorted(p.stem for p in DIRECTORY.glob("*.yaml"))


def text(name):
    path = DIRECTORY / f"{name}.yaml"
    if name not in names():
        raise RecipeError([RecipeProblem("", f"No built-in recipe {name!r}; choose one of {', '.join(names())}.")])
    return path.read_text(encoding="utf-8")


def load(name):
    return parse_text(text(name))


def with_endpoints(data, endpoints):
    """The recipe with `endpoints` (a list of endpoint entries) instead of its own; every job uses all of them."""
    if not isinstance(endpoints, list) or not endpoints or not all(isinstance(e, dict) for e in endpoints):
        raise RecipeError(
            [RecipeProblem("endpoints", "give a non-empty list of endpoints (name, provider, model_id, …)")]
        )
    data = dict(data, endpoints=endpoints)
    everyone = [e.get("name") for e in endpoints]
    for section, key in JOB_ENDPOINTS:
        data[section] = [dict(job, **{key: list(everyone)}) for job in data.get(section) or []]
    return data


# The gallery on the Recipe page ("Start from a published study"): each built-in recipe with the study it follows.
GALLERY = (
    {
        "name": "fang2025",
        "title": "Fang 2025: a three-phase mixed-methods audit",
        "citation": "Fang, Y. (2025). A Future Only “Generated” for Some: an Investigation into Gender Bias in GenAI "
        "Text Outputs and Bias Mitigation Using Prompt-based Framework. Laidlaw Scholars research report.",
        "summary": "Phase 1 asks each model a 66-item sexism scale (AWS, Modern Sexism, Neosexism and the ASI) and "
        "has it write stories for gendered occupation pairs; phase 2 collects long induction stories that are coded "
        "inductively into gendered codes; phase 3 turns those codes into a 30-prompt toolkit whose stories are "
        "judged 0/1 by another model in rotation, so no model judges its own outputs, giving detection scores per "
        "prompt and dimension.",
    },
    {
        "name": "jung2025-asi",
        "title": "Jung 2025: validating the Ambivalent Sexism Inventory on LLMs",
        "citation": "Jung, J. (2025). Measuring ambivalent sexism in large language models: A validation study. "
        "Master's thesis, University of Mannheim.",
        "summary": "The 22-item ASI and its alternate form are asked one item per prompt at temperature 0 under "
        "persona contexts, with a second run permuting the answer options; the Modern Sexism Scale gives convergent "
        "validity and reference letters scored with agentic and communal word lists give concurrent validity. "
        "Reliability (stratified alpha, alternate form, option order) is rated before validity is read.",
    },
    {
        "name": "rupsycho-personas",
        "title": "R.U.Psycho: reproducible questionnaire experiments with personas",
        "citation": "Schelb, J., Borin, O., Garcia, D., & Spitz, A. (2025). R.U.Psycho? Robust Unified "
        "Psychometric Testing of Language Models. (R.U.Psycho framework: github.com/julianschelb/rupsycho.)",
        "summary": "One declarative experiment asks the ASI of 250 personas (Mr./Ms. × 25 surnames from five "
        "lists) over model × seed × persona × item, each a fresh single-turn prompt in the JSON prompt variant, at "
        "temperature 1.0, top_p 0.95 and 64 new tokens; answers are cleaned, validated against refusals and mapped "
        "to an option, with provenance kept for every generation.",
    },
    {
        "name": "wan2023-letters",
        "title": "Wan et al. 2023: gender biases in LLM-generated reference letters",
        "citation": "Wan, Y., Pu, G., Sun, J., Garimella, A., Chang, K.-W., & Peng, N. (2023). “Kelly is a Warm "
        "Person, Joseph is a Role Model”: Gender Biases in LLM-Generated Reference Letters. Findings of EMNLP 2023 "
        "(arXiv:2310.09219).",
        "summary": "Context-less reference letters are generated from a name/gender × age × occupation template "
        "grid and scored with lexicons of agentic, communal and related words: lexical odds ratios compare the "
        "letters written for men and women (above 1 = male-salient), after a success filter drops empty, "
        "repetitive letters and letters that never recommend.",
    },
    {
        "name": "regard",
        "title": "German regard: gender bias in language generation",
        "citation": "Kraft, A., Zorn, H.-P., Fecht, P., Simon, J., Biemann, C., & Usbeck, R. (2022). Measuring "
        "Gender Bias in German Language Generation. INFORMATIK 2022, Lecture Notes in Informatics.",
        "summary": "Two subjects (the woman, the man) × 10 bias contexts (five on occupation, five on respect, after "
        "Sheng et al.) give 20 prompts with 50 sampled completions each; annotators label the regard of each "
        "sentence as positive, neutral or negative (majority label = gold), label counts are compared for women "
        "and men with χ² (df = 2), and keyword facets (caregiving, sexualization, perpetration) are reviewed by "
        "hand.",
    },
)


def gallery():
    """The gallery entries (name, title, citation, summary) of the built-in recipes this installation has."""
    available = set(names())
    return [dict(entry) for entry in GALLERY if entry["name"] in available]


def gallery_entry(name):
    return next((e for e in gallery() if e["name"] == name), None)
