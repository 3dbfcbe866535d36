from .api_agreement import api_routes as agreement_routes

api_routes = [] + agreement_routes
