"""The answers of the recipe API: a recipe's problems (400) and an apply / plan outcome as JSON."""

from rest_framework import status
from rest_framework.response import Response

from .. import services


def problems_response(exc):
    return Response(
        {
            "detail": "The recipe has problems; nothing was written.",
            "problems": [{"path": p.path, "message": p.message} for p in exc.problems],
        },
        status=status.HTTP_400_BAD_REQUEST,
    )


def outcome_data(outcome):
    """`known_cost_usd` sums what is priced; when `cost_complete` is false, `unpriced_endpoints` names the endpoints
    without prices that leave the total unknown. `new_calls` counts only calls of jobs the study does not have."""
    cost = services.cost_summary(outcome.jobs)
    return {
        "study": outcome.study.pk if outcome.study else None,
        "changes": [{"action": c.action, "kind": c.kind, "name": c.name, "detail": c.detail} for c in outcome.changes],
        "jobs": outcome.jobs,
        "new_calls": services.new_calls(outcome.jobs),
        "calls_summary": services.calls_text(outcome.jobs, outcome.changes),
        "known_cost_usd": str(cost["known_cost_usd"]),
        "cost_complete": cost["complete"],
        "unpriced_endpoints": cost["unpriced_endpoints"],
        "cost_summary": services.cost_text(outcome.jobs),
    }
