from .runs.api import api_routes as run_routes
from .runs.api_connections import api_urls  # noqa: F401  (mounted under /api/ by the project URLs)
from .toolkits.api import api_routes as toolkit_routes

api_routes = toolkit_routes + run_routes
