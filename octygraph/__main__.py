"""`python -m octygraph` runs the command line."""

from octygraph.cli import main

main()
