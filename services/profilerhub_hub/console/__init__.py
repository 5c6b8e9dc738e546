"""The web console: sign-in, the pages of the three roles, and the API docs, served by the hub.

routes.py    sign-in and sign-out, presigned links, the page shell, static assets, /api/v1/docs
links.py     presigned sign-in links: make, read
static/      console.css and the ES modules (no build step, nothing inline)
templates/   the HTML shells
"""

from profilerhub_hub.console.routes import install_console

__all__ = ["install_console"]
