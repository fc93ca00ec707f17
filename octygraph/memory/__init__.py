"""A memory's life cycle over the store, and reviewing it by hand.

`candidates` (stored because they might last, given only once confirmed), `uses` (how often a memory
was given or said again), `review` (remember, forget, restore, edit; rules and contradictions),
`candidate_review` (candidates listed and approved by hand), `feedback` (the user's verdicts as labelled
examples), `learning` (`octygraph memory learn`: the storage verdict refitted to them, also run as
`python -m octygraph.memory.learning`), and `transfer` (export and import, Markdown and JSONL).
"""
