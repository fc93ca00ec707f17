"""Safety of what gets stored: secret redaction, prompt-injection detection, grounding.

`secrets` redacts credentials from everything written to disk; `checks` holds the sentence-level
checks (injection phrases, grounding of a memory in the user's words); `planted` and `intent` judge a
whole message for an attempt to plant instructions in memory. Pure functions over the stdlib and
`octygraph.text`.
"""
