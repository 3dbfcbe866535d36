"""Domain statistics, Django-free: agreement coefficients, categorical tests, text processing and the one
"is it defined?" rule. Nothing here imports Django or an app."""
