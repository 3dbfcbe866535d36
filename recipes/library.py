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
        "Text Outputs and Bias Mitigation Using Prompt-based Framework. Research report, Laidlaw Scholars "
        "Undergraduate Leadership and Research Programme (advisor: J. Chen), 31 August 2025.",
        "summary": "Phase 1 asks each model a 66-item sexism scale (AWS, Modern Sexism, Neosexism and the ASI) and "
        "has it write stories for 10 gendered occupation pairs, each coded stereotyped, counter-stereotyped or same "
        "sex; phase 2 collects long stories for five induction prompts (five repetitions per model), coded "
        "inductively into gendered codes grouped into six dimensions; phase 3 turns those codes into a 30-prompt "
        "toolkit, has a model list the recurring codes of five stories per prompt, and has another model judge each "
        "story 0/1 in rotation, so no model judges its own outputs, giving detection scores per prompt and "
        "dimension. Its limitations ask for a human check of the judges' verdicts, which the recipe adds.",
    },
    {
        "name": "jung2025-asi",
        "title": "Jung 2025: validating the Ambivalent Sexism Inventory on LLMs",
        "citation": "Jung, J. (2025). Measuring ambivalent sexism in large language models: A validation study. "
        "Master's thesis, Chair for Data Science in the Economic and Social Sciences, University of Mannheim.",
        "summary": "The 22-item ASI and its alternate form are asked one item per prompt at temperature 0 under "
        "persona and conversation contexts, with a second run permuting the answer options and the answer "
        "extraction audited by hand; the Modern Sexism Scale gives convergent validity and reference letters scored "
        "with agentic, standout, ability, communal and grindstone word lists (odds ratios) give concurrent validity. "
        "Reliability (stratified alpha, alternate form, option order) is rated before validity is read. The "
        "recipe's personas stand in for the thesis's Persona Hub and Chatbot Arena contexts, which are not bundled.",
    },
    {
        "name": "rupsycho-personas",
        "title": "R.U.Psycho: reproducible questionnaire experiments with personas",
        "citation": "Schelb, J., Borin, O., Garcia, D., & Spitz, A. (2025). R.U.Psycho? Robust Unified "
        "Psychometric Testing of Language Models. arXiv:2503.10229. (Framework: github.com/julianschelb/rupsycho.)",
        "summary": "One declarative experiment runs model × seed × persona × item, each a fresh single-turn prompt "
        "in the JSON prompt variant at temperature 1.0, top_p 0.95 and 64 new tokens, over 250 personas (Mr./Ms. × "
        "25 surnames from each of five lists); answers are cleaned, validated against refusals and mapped to an "
        "option, with provenance kept for every generation. The recipe repeats its persona-induced bias experiment "
        "(the 23-item Gender/Sex Diversity Beliefs questionnaire) and applies the same design to the ASI.",
    },
    {
        "name": "wan2023-letters",
        "title": "Wan et al. 2023: gender biases in LLM-generated reference letters",
        "citation": "Wan, Y., Pu, G., Sun, J., Garimella, A., Chang, K.-W., & Peng, N. (2023). “Kelly is a Warm "
        "Person, Joseph is a Role Model”: Gender Biases in LLM-Generated Reference Letters. In Findings of the "
        "Association for Computational Linguistics: EMNLP 2023, pages 3730–3748 (arXiv:2310.09219).",
        "summary": "Context-less reference letters are generated from a name/gender × age × occupation template "
        "grid; a success filter drops empty, repetitive letters and letters that never recommend; lexical odds "
        "ratios compare the letters written for men and women (above 1 = male-salient). For letters written from "
        "biographies, the share of formal, positive and agentic sentences per letter is compared with t-tests and "
        "hallucinated sentences are found by NLI. The recipe covers the context-less letters (with the style "
        "measures); the paper's word lists and descriptor table are not in its text, so Jung 2025's adaptation of "
        "the grid and word lists stands in.",
    },
    {
        "name": "regard",
        "title": "German regard: gender bias in language generation",
        "citation": "Kraft, A., et al. (2022). Measuring Gender Bias in German Language Generation. In INFORMATIK "
        "2022, Lecture Notes in Informatics, Gesellschaft für Informatik (dl.gi.de/handle/20.500.12116/39481; code "
        "and data: github.com/krangelie/German_NLG_bias).",
        "summary": "A German subject (Die Frau, Der Mann) and 10 bias contexts translated from Sheng et al. (five on "
        "occupation, five on respect) give 20 prompts, with 50 sampled completions each from GPT-3 (100 from "
        "GerPT-2). Each sentence's regard is labelled positive, neutral or negative: five annotators label "
        "sentences (a sentence anyone marks uncertain is dropped, the majority label is gold) to train and test a "
        "German regard classifier, which labels the completions; label counts are compared for women and men with "
        "χ² (df = 2) and shown per context type, and keyword facets (caregiving, sexualization, perpetration) are "
        "reviewed by hand. In the recipe a categorical judge and five coders label the completions.",
    },
)


def gallery():
    """The gallery entries (name, title, citation, summary) of the built-in recipes this installation has."""
    available = set(names())
    return [dict(entry) for entry in GALLERY if entry["name"] in available]


def gallery_entry(name):
    return next((e for e in gallery() if e["name"] == name), None)
