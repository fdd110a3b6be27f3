"""The series the Prometheus JMX exporter makes of MBeans with a rules file such as
deploy/prometheus/jmx-exporter.yml, computed as the exporter does: each attribute is written
`domain<key=value, ...><>attribute: value` (the MBean's keys in their own order), the first rule
whose `pattern` matches anywhere in it names the series (`$1` ... from its groups; names
lower-cased with `lowercaseOutputName`, characters Prometheus does not allow made `_`), and an
attribute no rule matches is not exported.

    exported(yaml.safe_load(rules_text), read_mbeans())  # {"stickyd_plugin_outage": {"assignor", ...}}"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_GROUP_REFERENCE = re.compile(r"\$(\d+)")


def match_text(bean: str, attribute: str, value: float | None) -> str:
    """What a rule's pattern is matched against: `kafka.stickyd<type=a, assignor=b><>outage: 0.0`."""
    domain, keys = bean.split(":", 1)
    return f"{domain}<{', '.join(keys.split(','))}><>{attribute}: {value}"


def _expand(template: str, match: re.Match[str]) -> str:
    return _GROUP_REFERENCE.sub(lambda ref: match.group(int(ref.group(1))) or "", template)


def series_of(config: Mapping[str, Any], text: str) -> tuple[int, str, set[str]] | None:
    """The rule that names the attribute written as `text` (its index), the series' name and its
    label names; None when no rule matches (the attribute is not exported)."""
    for index, rule in enumerate(config["rules"]):
        found = re.match(f"^.*(?:{rule['pattern']}).*$", text)
        if found is not None:
            name = re.sub(r"[^a-zA-Z0-9_:]", "_", _expand(rule["name"], found))
            name = name.lower() if config.get("lowercaseOutputName") else name
            return index, name, {_expand(label, found) for label in rule.get("labels", {})}
    return None


def exported(config: Mapping[str, Any], beans: Mapping[str, Mapping[str, float | None]]) -> dict[str, set[str]]:
    """Series name -> its label names, for every attribute of `beans` (MBean name -> attribute ->
    value) that a rule of `config` matches."""
    series: dict[str, set[str]] = {}
    for bean, attributes in beans.items():
        for attribute, value in attributes.items():
            named = series_of(config, match_text(bean, attribute, value))
            if named is not None:
                series.setdefault(named[1], set()).update(named[2])
    return series
