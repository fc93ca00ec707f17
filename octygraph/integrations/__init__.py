"""What the user and Claude reach octygraph through: the command line (`cli`), the MCP server (`mcp`)
and the local review page (`ui`).

They sit on top of everything else; nothing in the package imports from here but `octygraph.entry`
and `octygraph.__main__`. Claude Code's own formats and installation (`octygraph.claude`) stay far
below: the pipeline, the session and the service read them.
"""
