"""Reports of the pipeline's jobs: a summary, tables under headings, and a chart; Markdown or HTML."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

import pandas as pd


def new_figure(columns: int, size: tuple[float, float]) -> tuple[Any, Any]:
    """A matplotlib figure on the file-only backend (no display needed): (figure, axes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, columns, figsize=size)


def png_bytes(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return out.getvalue()


def fleet_chart(stats: pd.DataFrame) -> bytes:
    """PNG: moves (share of owned) and balance (max - min load) across the fleet."""
    fig, (moves_ax, balance_ax) = new_figure(2, (11, 4))
    moved = (stats["moves"] / stats["owned"].where(stats["owned"] > 0)).dropna() * 100
    moves_ax.hist(moved, bins=20, range=(0, 100), color="#3b6ea8")
    moves_ax.set_title("partitions moved, % of owned, per group")
    moves_ax.set_xlabel("% moved")
    moves_ax.set_ylabel("groups")
    counts = stats["balance"].value_counts().sort_index()
    balance_ax.bar([str(int(b)) for b in counts.index], counts.values, color="#5a9e6f")
    balance_ax.set_title("balance: max - min load, per group")
    balance_ax.set_xlabel("max - min load")
    balance_ax.set_ylabel("groups")
    return png_bytes(fig)


Section = tuple[str, pd.DataFrame | str]


def _markdown_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)"
    head = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    return str(value).replace("|", "\\|")


def plan_sections(
    stats: pd.DataFrame, errors: pd.DataFrame, traffic: pd.DataFrame | None, unit: str = "line"
) -> list[Section]:
    """The report's tables, each under its heading. `unit`: how rejected rows are numbered."""
    sections: list[Section] = []
    if stats.empty:
        sections.append(("By kind and solver", "no group was solved"))
    else:
        by = stats.groupby(["kind", "solver"]).agg(
            groups=("group_id", "count"),
            optimal=("optimal", "sum"),
            fallbacks=("fallback", "sum"),
            moves=("moves", "sum"),
            owned=("owned", "sum"),
            worst_balance=("balance", "max"),
            p50_ms=("time_ms", "median"),
            max_ms=("time_ms", "max"),
        )
        sections.append(("By kind and solver", by.reset_index()))
        top = stats.sort_values(["moves", "group_id"], ascending=[False, True]).head(10)
        columns = ["group_id", "kind", "members", "partitions", "moves", "owned", "balance", "solver"]
        sections.append(("Groups that move most", top[columns]))
        sections.append(limited_groups(stats))
        if "load_before" in stats and stats["load_before"].notna().any():
            sections.append(load_groups(stats))
    if traffic is not None:
        worst = traffic.dropna(subset=["skew"]).sort_values("skew", ascending=False).head(10)
        columns = ["group_id", "member", "partitions", "bytes_per_s", "share", "skew"]
        sections.append(("Traffic: members furthest above a fair share of bytes/s", worst[columns]))
    sections.append(rejected_rows(errors, "group_id", unit, "rows"))
    return sections


LIMITED_SHOWN = 50


def load_groups(stats: pd.DataFrame) -> Section:
    """Balance `load`: per group the bottleneck (largest weight / capacity) before and after, and
    the moves, the groups whose bottleneck falls most first."""
    weighed = stats[stats["load_before"].notna()].copy()
    weighed["fell_by"] = weighed["load_before"] - weighed["load_after"]
    weighed = weighed.sort_values(["fell_by", "group_id"], ascending=[False, True])
    shown = weighed.head(LIMITED_SHOWN)
    heading = f"Load: the bottleneck before and after ({len(weighed)} groups; all in stats/" + (
        f"; the {LIMITED_SHOWN} whose bottleneck falls most shown)" if len(weighed) > LIMITED_SHOWN else ")"
    )
    columns = ["group_id", "members", "load_before", "load_after", "load_lower_bound", "moves"]
    return heading, shown[columns]


def limited_groups(stats: pd.DataFrame) -> Section:
    """Every group not proven optimal or with loads more than one apart, with what limits it."""
    limited = stats[(stats["limited_by"].fillna("") != "") | ~stats["optimal"].astype(bool) | (stats["balance"] > 1)]
    limited = limited.sort_values(["balance", "group_id"], ascending=[False, True])
    heading = (
        f"Groups not proven optimal or not balanced ({len(limited)} of {len(stats)}; why: `limited_by` in stats/"
        + (f"; the {LIMITED_SHOWN} least balanced shown)" if len(limited) > LIMITED_SHOWN else ")")
    )
    columns = ["group_id", "kind", "optimal", "fallback", "balance", "min_load", "max_load", "limited_by"]
    return heading, limited[columns].head(LIMITED_SHOWN)


def rejected_rows(errors: pd.DataFrame, key: str, unit: str, what: str) -> Section:
    """The first rejected rows by `unit` number (never an empty cell: a row without `key` says so)."""
    shown = errors[["row", key, "error_field", "error_reason"]].head(20).copy()
    shown[key] = shown[key].map(lambda v: v if isinstance(v, str) and v else f"(no {key})")
    shown = shown.rename(columns={"row": unit, "error_field": "field", "error_reason": "reason"})
    return f"Rejected {what} ({len(errors)}; all of them are in errors/)", shown


def write_report(
    out: Path,
    fmt: str,
    title: str,
    summary: dict[str, Any],
    sections: list[Section],
    png: bytes,
    chart_name: str,
) -> Path:
    """report.md next to the chart's PNG, or one self-contained report.html."""
    if fmt == "html":
        image = "data:image/png;base64," + base64.b64encode(png).decode()
        parts = [f"<h1>{html.escape(title)}</h1>", "<ul>"]
        parts += [f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in summary.items()]
        parts += ["</ul>", f'<img alt="{html.escape(title)}" src="{image}">']
        for heading, body in sections:
            parts.append(f"<h2>{html.escape(heading)}</h2>")
            parts.append(body.to_html(index=False) if isinstance(body, pd.DataFrame) else f"<p>{html.escape(body)}</p>")
        path = out / "report.html"
        path.write_text(
            f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"</head><body>{''.join(parts)}</body></html>"
        )
        return path
    (out / chart_name).write_bytes(png)
    lines = [f"# {title}", "", *[f"- {k}: {v}" for k, v in summary.items()], "", f"![{title}]({chart_name})", ""]
    for heading, body in sections:
        lines += [f"## {heading}", "", body if isinstance(body, str) else _markdown_table(body), ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
