"""Views of one result object: terminal, JSON, HTML."""
