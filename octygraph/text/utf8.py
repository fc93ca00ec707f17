"""Text that UTF-8 can hold: lone surrogates replaced before text is tokenised, stored or sent."""

from __future__ import annotations

import re
from typing import Final

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD.

    Python keeps argument bytes that are not UTF-8 as lone surrogates, and JSON may carry one
    (`"\\ud800"`); neither can be encoded, tokenised or written to a database as it is.
    """
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text
