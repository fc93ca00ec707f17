"""`octygraph ui`: a local review page for the project's memory (Starlette, Jinja2, served by uvicorn)."""
