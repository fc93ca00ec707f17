"""Learned judgement: what in a message is worth remembering, and which memories a prompt needs.

Both decisions are small linear models over the local embedding model's sentence vectors plus cheap,
named features, fitted by the scripts in `training/` on labelled sets written to the labelling
guideline. Their weights ship as `octygraph/data/*.npz`; at run time they are a dot product (NumPy only).
Modules: `segments` (units of a message), `shape` (the gate's features), `gate` (store or not, and
which kind), `standalone` (memories that read right later), `relevance` and `topics` (inject or not),
`linear` (the model files), `vectors` (cached local-model vectors).
"""
