"""Text at the level of words: sentence splitting, tokens and stems, word lists, date expressions,
and text that UTF-8 can hold.

Pure functions over the stdlib; nothing here decides what a sentence means. Safety, judgement and the
no-LLM fallback read text with it.
"""
