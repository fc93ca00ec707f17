"""Text at the level of words: sentence splitting, tokens and stems, word lists, date expressions.

Pure functions over the stdlib; nothing here decides what a sentence means. Safety, judgement and the
no-LLM fallback read text with it.
"""
