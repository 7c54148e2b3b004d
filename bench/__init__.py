"""The project's single benchmark command: ``.venv/bin/python -m bench``."""
