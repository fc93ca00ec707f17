"""Resolve date expressions in a prompt to ISO dates, relative to a given day.

Stdlib only: no date-parsing library is a dependency, and the forms that matter in prompts are few.
Conventions (documented because they are choices):

- Weeks start on Monday. "next Friday" is the Friday of next week; "this Friday", "by Friday"
  and a bare "Friday" are the coming one (today counts for "this"/"by"); "last Friday" is the
  most recent one before today.
- "next week" is next week's Monday, "next month" the 1st of next month, "end of the week" this
  week's Friday, "end of the month" its last day.
- A month and day without a year ("March 3") takes the year that puts it nearest today, unless
  `prefer` says future (plans) or past (events).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final, Literal

Prefer = Literal["nearest", "future", "past"]

_MONTHS: Final[dict[str, int]] = {
    name: index
    for index, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_WEEKDAYS: Final[dict[str, int]] = {
    name: index
    for index, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
_NUMBERS: Final[dict[str, int]] = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
}

_MONTH_RE: Final = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_FULL_DAY_RE: Final = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_ANY_DAY_RE: Final = (
    r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu(?:rs?)?|"
    r"fri|sat|sun)\.?"
)
_COUNT_RE: Final = r"(\d{1,3}|a couple of|a couple|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT_RE: Final = r"(day|week|month|year)s?"


@dataclass(frozen=True, slots=True)
class DateMatch:
    """A date expression found in text."""

    value: date
    start: int
    end: int
    text: str


def _safe(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _add_months(day: date, months: int) -> date:
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _shift(today: date, count: int, unit: str) -> date:
    if unit == "day":
        return today + timedelta(days=count)
    if unit == "week":
        return today + timedelta(weeks=count)
    if unit == "month":
        return _add_months(today, count)
    return _add_months(today, 12 * count)


def _pick_year(month: int, day: int, today: date, prefer: Prefer) -> date | None:
    options = [
        d for y in (today.year - 1, today.year, today.year + 1) if (d := _safe(y, month, day))
    ]
    if not options:
        return None
    if prefer == "future":
        return next((d for d in options if d >= today), options[-1])
    if prefer == "past":
        return next((d for d in reversed(options) if d <= today), options[0])
    return min(options, key=lambda d: (abs((d - today).days), d < today))


def _count(text: str) -> int:
    text = text.lower().strip()
    return int(text) if text.isdigit() else _NUMBERS.get(text, 1)


def _weekday(word: str) -> int:
    return _WEEKDAYS[word.lower().rstrip(".")]


Handler = Callable[[re.Match[str], date, Prefer], date | None]


def _iso(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    return _safe(int(m[1]), int(m[2]), int(m[3]))


def _month_day(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    month, day = _MONTHS[m[1].lower()], int(m[2])
    return _safe(int(m[3]), month, day) if m[3] else _pick_year(month, day, today, prefer)


def _day_month(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    day, month = int(m[1]), _MONTHS[m[2].lower()]
    return _safe(int(m[3]), month, day) if m[3] else _pick_year(month, day, today, prefer)


def _numeric(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    first, second = int(m[2]), int(m[3])
    month, day = (second, first) if first > 12 else (first, second)  # 14/3 is day/month
    if m[4]:
        year = int(m[4])
        return _safe(year + 2000 if year < 100 else year, month, day)
    return _pick_year(month, day, today, prefer)


_RELATIVE_DAYS: Final[dict[str, int]] = {
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
    "later today": 0,
    "end of day": 0,
    "eod": 0,
    "tomorrow": 1,
    "day after tomorrow": 2,
    "yesterday": -1,
    "last night": -1,
    "day before yesterday": -2,
}


def _relative_day(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    key = " ".join(m[0].lower().replace("the ", "").split())
    return today + timedelta(days=_RELATIVE_DAYS[key])


def _weekday_phrase(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    lead = (m[1] or "").lower()
    target = _weekday(m[2])
    ahead = (target - today.weekday()) % 7
    if lead == "next":
        return today - timedelta(days=today.weekday()) + timedelta(days=7 + target)
    if lead in ("last", "past") or (lead in ("", "on") and prefer == "past"):
        return today - timedelta(days=(today.weekday() - target) % 7 or 7)
    if lead in ("this", "by", "until", "before", "coming", "this coming"):
        return today + timedelta(days=ahead)
    return today + timedelta(days=ahead or 7)


def _period(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    lead, unit = m[1].lower(), m[2].lower()
    monday = today - timedelta(days=today.weekday())
    if unit == "weekend":
        saturday = monday + timedelta(days=5)
        return (
            saturday + timedelta(days=7)
            if lead == "next"
            else saturday - timedelta(days=7 if lead == "last" else 0)
        )
    step = 1 if lead == "next" else -1 if lead == "last" else 0
    if unit == "week":
        return monday + timedelta(weeks=step) if step else monday
    if unit == "month":
        first = date(today.year, today.month, 1)
        return _add_months(first, step) if step > 0 else _add_months(today, step)
    if unit == "quarter":
        first = date(today.year, 3 * ((today.month - 1) // 3) + 1, 1)
        return _add_months(first, 3 * step) if step > 0 else _add_months(today, 3 * step)
    return date(today.year + 1, 1, 1) if step > 0 else _add_months(today, 12 * step)


def _end_of(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    unit = m[1].lower()
    if unit in ("week", "eow"):
        friday = today + timedelta(days=4 - today.weekday())
        return max(friday, today)
    if unit in ("month", "eom"):
        return date(today.year, today.month, calendar.monthrange(today.year, today.month)[1])
    if unit == "quarter":
        last_month = 3 * ((today.month - 1) // 3) + 3
        return date(today.year, last_month, calendar.monthrange(today.year, last_month)[1])
    return date(today.year, 12, 31)


def _in_count(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    return _shift(today, _count(m[1]), m[2].lower())


def _ago(m: re.Match[str], today: date, prefer: Prefer) -> date | None:
    return _shift(today, -_count(m[1]), m[2].lower())


_PATTERNS: Final[tuple[tuple[re.Pattern[str], Handler], ...]] = tuple(
    (re.compile(pattern, re.IGNORECASE), handler)
    for pattern, handler in (
        (r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b", _iso),
        (rf"\b{_MONTH_RE}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?", _month_day),
        (
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}\b(?:,?\s+(\d{{4}})\b)?",
            _day_month,
        ),
        (
            r"\b(on|by|due|until|before|after|from|for)\s+(\d{1,2})/(\d{1,2})(?:/(\d{2,4}))?\b",
            _numeric,
        ),
        (
            r"\b(?:(?:the\s+)?day\s+after\s+tomorrow|(?:the\s+)?day\s+before\s+yesterday|"
            r"tomorrow|yesterday|today|tonight|last\s+night|this\s+(?:morning|afternoon|evening)|later\s+today|"
            r"end\s+of\s+day|eod)\b",
            _relative_day,
        ),
        (
            rf"\b(?:(next|last|past|this coming|this|coming|on|by|until|before)\s+){_ANY_DAY_RE}(?!\w)",
            _weekday_phrase,
        ),
        (rf"\b(){_FULL_DAY_RE}\b", _weekday_phrase),
        (r"\b(next|last|this)\s+(week|weekend|month|quarter|year)\b", _period),
        (
            r"\b(?:by\s+)?(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?(week|month|quarter|year)\b",
            _end_of,
        ),
        (r"\b(eow|eom)\b", _end_of),
        (rf"\b(?:in|within)\s+{_COUNT_RE}\s+{_UNIT_RE}\b", _in_count),
        (rf"\b{_COUNT_RE}\s+{_UNIT_RE}\s+from\s+now\b", _in_count),
        (rf"\b{_COUNT_RE}\s+{_UNIT_RE}\s+ago\b", _ago),
    )
)


def find_date(
    text: str, today: date | None = None, *, prefer: Prefer = "nearest"
) -> DateMatch | None:
    """Find the first date expression in `text` and resolve it.

    Args:
        text: Any text, e.g. one sentence of a prompt.
        today: The reference day (defaults to the local date).
        prefer: How to read an expression without a year or direction: "nearest", "future"
            (plans) or "past" (events).

    Returns:
        The earliest match in the text (the longest when two start together), or None.
    """
    today = today or date.today()
    best: DateMatch | None = None
    for pattern, handler in _PATTERNS:
        for m in pattern.finditer(text):
            if best is not None and (m.start(), -m.end()) >= (best.start, -best.end):
                break
            value = handler(m, today, prefer)
            if value is not None:
                best = DateMatch(value, m.start(), m.end(), m[0])
                break
    return best


def resolve_date(text: str, today: date | None = None, *, prefer: Prefer = "nearest") -> str | None:
    """Resolve the first date expression in `text` to `YYYY-MM-DD` (see `find_date`).

    Handles ISO dates, "today"/"tomorrow"/"yesterday", weekdays ("next Friday", "by Friday",
    "last Monday"), "on March 3"/"3rd of March"/"March 3, 2026", "in 2 weeks", "3 days ago",
    "next week/month", "end of the month" and "on 3/14".
    """
    found = find_date(text, today, prefer=prefer)
    return found.value.isoformat() if found else None


_LOOKBACK: Final[tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], int]], ...]] = tuple(
    (re.compile(pattern, re.IGNORECASE), fn)
    for pattern, fn in (
        (
            rf"\b(?:last|past|previous)\s+{_COUNT_RE}\s+{_UNIT_RE}\b",
            lambda m: _count(m[1]) * {"day": 1, "week": 7, "month": 31, "year": 366}[m[2].lower()],
        ),
        (
            rf"\b{_COUNT_RE}\s+{_UNIT_RE}\s+ago\b",
            lambda m: (
                _count(m[1]) * {"day": 1, "week": 7, "month": 31, "year": 366}[m[2].lower()] + 1
            ),
        ),
        (r"\b(?:today|this morning|this afternoon|tonight|so far today)\b", lambda m: 1),
        (r"\byesterday\b", lambda m: 2),
        (rf"\blast\s+{_FULL_DAY_RE}\b", lambda m: 8),
        (r"\b(?:this|last|past|previous)\s+week\b", lambda m: 7),
        (r"\b(?:recent(?:ly)?|lately|latest|the other day)\b", lambda m: 14),
        (r"\b(?:this|last|past|previous)\s+month\b", lambda m: 31),
        (r"\b(?:this|last|past|previous)\s+quarter\b", lambda m: 92),
        (r"\b(?:this|last|past|previous)\s+year\b", lambda m: 366),
    )
)


def lookback_days(text: str) -> int | None:
    """How many days back a question about past events looks ("last week" -> 7), or None."""
    for pattern, fn in _LOOKBACK:
        m = pattern.search(text)
        if m:
            return fn(m)
    return None


AHEAD_DAYS: Final = 14
"""How far "what's coming up?" looks: two weeks, a sprint."""
_AHEAD: Final = re.compile(
    r"(?i)\b(?:coming\s+up|upcoming|deadlines?|due\s+soon|on\s+the\s+(?:calendar|schedule))\b"
)
_THIS_WEEK: Final = re.compile(r"(?i)\b(?:this|the\s+rest\s+of\s+the)\s+week\b")


def asked_window(question: str, today: date | None = None) -> tuple[date, date] | None:
    """The days a question about what lies ahead asks about ("What's happening tomorrow?",
    "What deadlines are coming up?", "Anything due next week?"), first and last, or None.

    A day it names is that day; "this week" runs to Sunday; "coming up", "upcoming" and
    "deadlines" look `AHEAD_DAYS` ahead."""
    today = today or date.today()
    if _THIS_WEEK.search(question):
        return today, today + timedelta(days=6 - today.weekday())
    found = find_date(question, today, prefer="future")
    if found is not None and found.value >= today:
        period = re.fullmatch(r"(?i)next\s+(week|month)", found.text.strip())
        if period is None:
            return found.value, found.value
        if period[1].lower() == "week":
            return found.value, found.value + timedelta(days=6)
        return found.value, _add_months(found.value, 1) - timedelta(days=1)
    if _AHEAD.search(question):
        return today, today + timedelta(days=AHEAD_DAYS)
    return None
