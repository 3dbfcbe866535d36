"""The report API's JSON form of a study report document."""


def document_json(doc):
    return {
        "title": doc.title,
        "subtitle": doc.subtitle,
        "sections": [{"key": s.key, "title": s.title, "blocks": s.blocks} for s in doc.sections],
    }
