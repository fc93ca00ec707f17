"""A Claude Code session as octygraph serves it: what it is given at its start, what each hook call
does, and what is settled at its end.

`start` (the SessionStart block), `hooks` (`handle`: a hook event and its stdin payload in, the
pipeline run, the reply out) and `consolidation` (the candidates a session stored, settled when it
ends). The resident service above runs the hooks; when no service answers, the hook process runs
them itself.
"""
