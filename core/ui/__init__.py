"""`rmm ui`: a local inspector page over a store (the `ui` extra: starlette, uvicorn,
jinja2, imported only when the page is served)."""
