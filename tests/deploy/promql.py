"""The series a PromQL expression reads, without a PromQL parser: what is left once strings, label
matchers, ranges and grouping clauses are taken out is functions, keywords, numbers and metric
names. Good enough to hold the dashboard and the alert rules to the names `/metrics` serves."""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTIONS = _words(
    "abs absent absent_over_time avg avg_over_time bottomk ceil changes clamp clamp_max clamp_min count "
    "count_over_time count_values delta deriv exp floor group histogram_quantile holt_winters idelta "
    "increase irate label_join label_replace label_values last_over_time ln log2 log10 max max_over_time "
    "min min_over_time predict_linear quantile quantile_over_time rate resets round scalar sgn sort "
    "sort_desc sqrt stddev stdvar sum sum_over_time time timestamp topk vector"
)
KEYWORDS = _words("and or unless by without on ignoring group_left group_right offset bool inf nan")

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*\"")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*")


def balanced(expr: str) -> bool:
    """Parentheses, braces and brackets close in order (outside strings)."""
    pairs = {")": "(", "}": "{", "]": "["}
    stack: list[str] = []
    for char in _STRING.sub('""', expr):
        if char in "({[":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack


def metric_names(expr: str) -> set[str]:
    """Every metric name the expression selects."""
    text = _SELECTOR.sub(lambda m: f" {m.group(1) or ''} ", _STRING.sub('""', expr))  # names without matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges: [5m], [$__rate_interval]
    text = _GROUPING.sub(" ", text)
    text = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b", " ", text)
    return {name for name in _IDENTIFIER.findall(text) if name not in FUNCTIONS | KEYWORDS}


def label_matchers(expr: str) -> dict[str, set[str]]:
    """metric name -> the label names its selectors match on."""
    found: dict[str, set[str]] = {}
    for name, matchers in _SELECTOR.findall(_STRING.sub('""', expr)):
        found.setdefault(name, set()).update(label for label, _ in _MATCHER.findall(matchers))
    return found
