"""`python -m octygraph` runs the command line."""

from octygraph.integrations.cli import main

main()
