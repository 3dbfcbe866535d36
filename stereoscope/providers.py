"""Reads an app offers to apps that may not import it (the app graph is a DAG): annotation's exports show judge
verdicts, yet annotation does not depend on judging. The owning app registers its selectors in its
AppConfig.ready(); a caller gets None when that app is not installed and then leaves that part out."""

_providers = {}


def provide(name, selectors):
    """Register `selectors` (a module or object with read functions) under `name`, usually the app's label."""
    _providers[name] = selectors


def provider(name):
    """The selectors registered under `name`, or None."""
    return _providers.get(name)
