"""The web console: sign-in, the pages of the three roles, and the API docs, served by the hub.

routes.py    sign-in and sign-out, presigned links, the page shell, static assets, /api/v1/docs
             (``install_console``: ``create_app`` mounts it)
links.py     presigned sign-in links: make, read
oidc.py      the OpenID Connect client (one per hub process, in ``HubServices.oidc``)
static/      console.css and the ES modules (no build step, nothing inline)
templates/   the HTML shells

Nothing is imported here, so ``console.oidc`` and ``console.links`` load without the routes.
"""
