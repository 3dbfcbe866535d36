api_routes = []
