"""Learned judgement: what in a message is worth remembering, and which memories a prompt needs.

Both decisions are small linear models over the local embedding model's sentence vectors plus cheap,
named features, fitted by the scripts in `training/` on labelled sets written to the labelling
guideline. Their weights ship as `octygraph/data/*.npz`; at run time they are a dot product (NumPy only).
Below the models, the rules that read one sentence: `analysis` (what a sentence is: a question, a
rule, a correction; its tense, date and entities), `entities` (names without an LLM), `forms`
(sentence forms that say what they are), `instructions` (the eight instruction patterns and their
scope) and `patterns` (the storage filter's patterns: what a sentence would be stored as, and what may
never be stored). The models: `segments` (units of a message), `shape` (the gate's features), `gate`
(store or not, and which kind), `verdict` (the whole message, learned from real prompts), `standalone`
(memories that read right later), `relevance` and `topics` (inject or not), `linear` (the model
files), and above them all `storage` (the storage decision: what of a message is stored, weighing the
models with the patterns). They read words with `octygraph.text` and check safety with
`octygraph.safety`, neither of which imports from here; the no-LLM fallback (`octygraph.fallback`)
sits above.
"""
