from .api_runs import api_routes as run_routes
from .api_toolkits import api_routes as toolkit_routes

api_routes = toolkit_routes + run_routes
