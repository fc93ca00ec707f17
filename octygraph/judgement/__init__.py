"""Learned judgement: what in a message is worth remembering, and which memories a prompt needs.

Both decisions are small linear models over the local embedding model's sentence vectors plus cheap,
named features, fitted by the scripts in `training/` on labelled sets written to the labelling
guideline. Their weights ship as `octygraph/data/*.npz`; at run time they are a dot product (NumPy only).
Modules: `segments` (units of a message), `shape` (the gate's features), `gate` (store or not, and
which kind), `verdict` (the whole message, learned from real prompts), `standalone` (memories that
read right later), `relevance` and `topics` (inject or not), `linear` (the model files), `vectors`
(cached local-model vectors), and above them all `storage` (the storage decision: what of a message
is stored, weighing the models with the patterns of `heuristics`). They read text with `heuristics`,
which never imports from here.
"""
