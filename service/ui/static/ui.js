// stickyd's operator page: the groups the service keeps, one group's members, assignment and
// history, "what if" and "why"; and the watched Kafka cluster's consumer groups. Everything it shows
// comes from /v1/groups and /v1/cluster with the token typed in above (kept in this tab's sessionStorage). No library: DOM and SVG built by hand, no innerHTML.
"use strict";

(() => {
  const TOKEN_KEY = "stickyd.token";
  const SVG = "http://www.w3.org/2000/svg";
  const MANY_MEMBERS = 40;
  const main = document.getElementById("main");

  // ---- helpers: elements, numbers, the API ---------------------------------------------------

  function setAttrs(el, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  const put = (el, ...children) => {
    el.replaceChildren();
    return append(el, children);
  };
  const h = (tag, attrs, ...children) => {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    return append(el, children);
  };
  const s = (tag, attrs, ...children) => {
    const el = document.createElementNS(SVG, tag);
    setAttrs(el, attrs);
    return append(el, children);
  };

  const fmt = (n) => Number(n).toLocaleString("en-US");
  const when = (epoch) => new Date(epoch * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  const millis = (x) => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : fmt(Math.round(x))) + " ms";
  const enc = encodeURIComponent;
  const sum = (values) => values.reduce((a, b) => a + b, 0);
  const byName = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

  class ApiError extends Error {
    constructor(status, body) {
      super(body.detail || `the service answered ${status}`);
      this.status = status;
      this.body = body;
    }
  }

  const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

  async function api(path, body) {
    const headers = { Accept: "application/json" };
    if (token()) headers.Authorization = `Bearer ${token()}`;
    const init = { headers, method: body === undefined ? "GET" : "POST" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new ApiError(response.status, answer);
    return answer;
  }

  function ready(what) {
    window.stickydRenderedMs = performance.now();
    document.body.dataset.ready = what;
  }

  function failed(error, what) {
    let notice;
    if (error instanceof ApiError && error.status === 401) {
      notice = h("div", { class: "notice", id: "gate" }, h("strong", {}, "This service requires a token. "),
        "Enter one above (", h("code", {}, "stickyd tokens create --tenant NAME"), "); it is kept in this tab only.");
    } else if (error instanceof ApiError && error.status === 404) {
      notice = h("div", { class: "notice error", id: "not-found" }, `Not found: ${what}. `,
        "A group belongs to the tenant whose token created it. ", h("a", { href: "#/" }, "All groups"));
    } else {
      notice = h("div", { class: "notice error", id: "failure" }, String(error.message || error));
    }
    put(main, notice);
    ready("error");
  }

  function answerBadge(entry) {
    if (!entry) return h("span", { class: "muted" }, "-");
    if (entry.fallback) return h("span", { class: "badge bad" }, "fallback");
    if (entry.optimal) return h("span", { class: "badge good" }, "proven");
    return h("span", { class: "badge warn" }, "not proven");
  }

  const num = (value) => h("td", { class: "num" }, typeof value === "number" ? fmt(value) : value);

  // ---- the groups --------------------------------------------------------------------------

  async function showGroups() {
    let list;
    try {
      list = await api("/v1/groups");
    } catch (error) {
      return failed(error, "groups");
    }
    const heads = ["group", "kind", "members", "generation", "last rebalance", "moves", "answer", "solver", "balance"];
    const table = h("table", { id: "groups" },
      h("thead", {}, h("tr", {}, heads.map((name, i) => h("th", { class: i > 1 && i !== 4 && i < 7 ? "num" : "" }, name)))),
      h("tbody", {}, list.groups.map(groupRow)));
    put(main, h("h1", {}, "Groups"),
      list.groups.length ? h("div", { class: "card scroll-x" }, table)
        : h("p", { class: "muted", id: "no-groups" }, "No group yet: groups appear after their first POST /v1/groups/{id}/rebalance."));
    ready("groups");
  }

  function groupRow(group) {
    const last = group.last_rebalance;
    const people = [fmt(group.members)];
    if (group.leaving) people.push(` (${group.leaving} leaving)`);
    if (group.held) people.push(` (${group.held} held)`);
    return h("tr", { "data-group": group.group_id },
      h("td", {}, h("a", { href: `#/group/${enc(group.group_id)}` }, group.group_id)),
      h("td", {}, group.kind), num(people.join("")), num(group.generation),
      h("td", {}, last ? when(last.created_at) : "-"), num(last ? last.moves : "-"),
      h("td", { class: "num" }, answerBadge(last)), h("td", {}, last ? last.solver : "-"),
      h("td", {}, last ? `${fmt(last.min_load)}-${fmt(last.max_load)}` : "-"));
  }

  // ---- the watched cluster's consumer groups (GET /v1/cluster/groups) ------------------------

  async function showCluster() {
    let cluster;
    try {
      cluster = await api("/v1/cluster/groups");
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        put(main, h("h1", {}, "Cluster"), h("p", { class: "muted", id: "no-cluster" },
          "This service watches no Kafka cluster (set ", h("code", {}, "STICKYD_WATCH_BOOTSTRAP_SERVERS"), ")."));
        return ready("cluster");
      }
      return failed(error, "the watched cluster");
    }
    const heads = ["group", "kind", "state", "assignor", "members", "generation", "lag", "records/s",
      "most partitions: now / stickyd", "most records/s: now / stickyd", "moves"];
    const table = h("table", { id: "cluster-groups" },
      h("thead", {}, h("tr", {}, heads.map((name, i) => h("th", { class: i > 3 ? "num" : "" }, name)))),
      h("tbody", {}, cluster.groups.map(clusterRow)));
    put(main, h("h1", {}, "Cluster ", h("span", { class: "muted" }, cluster.bootstrap_servers)),
      cluster.groups.length ? h("div", { class: "card scroll-x" }, table)
        : h("p", { class: "muted", id: "no-cluster-groups" }, "No consumer group with members."),
      h("p", { class: "muted" }, "stickyd: its answer (optimal) to the group as it is, balancing by count and by load ",
        "(records/s measured by the service); nothing is stored. Moves: partitions its load answer would hand over."),
      cluster.skipped.length ? h("p", { class: "muted" }, `Not shown: ${cluster.skipped.join("; ")}`) : null);
    ready("cluster");
  }

  // "now / stickyd's", stickyd's marked better when lower
  function versus(now, then, key) {
    if (!now) return h("td", { class: "num" }, "-");
    const answer = then ? fmt(then.bottleneck[key]) : "-";
    const better = then && then.bottleneck[key] < now[key] ? "better" : "";
    return h("td", { class: "num", "data-figure": key }, `${fmt(now[key])} / `, h("span", { class: better }, answer));
  }

  function clusterRow(group) {
    const members = group.members.map((m) => h("li", { "data-member": m.client_id }, `${m.client_id} (${m.host}): ${m.partitions} partitions`));
    const cmp = group.stickyd || {};
    return h("tr", { "data-cluster-group": group.group_id },
      h("td", {}, h("a", { href: `#/cluster/${enc(group.group_id)}` }, group.group_id)), h("td", {}, group.kind),
      h("td", {}, group.state), h("td", {}, group.assignor),
      h("td", { class: "num" }, fmt(group.members.length), h("ul", { class: "members" }, members)),
      num(group.generation === null ? "-" : group.generation), num(group.total_lag), num(group.total_rate),
      versus(group.bottleneck, cmp.by_count, "count"), versus(group.bottleneck, cmp.by_load, "load"),
      num(cmp.by_load ? cmp.by_load.moves : cmp.reason || "-"));
  }

  // ---- one group of the watched cluster (GET /v1/cluster/groups/{id}) ----------------------

  async function showClusterGroup(id) {
    let group;
    try {
      group = await api(`/v1/cluster/groups/${enc(id)}`);
    } catch (error) {
      return failed(error, `group ${id} of the watched cluster`);
    }
    const ids = group.members.map((m) => m.member_id);
    const label = new Map(group.members.map((m) => [m.member_id, `${m.client_id} ${m.member_id.slice(0, 6)}`]));
    const bars = (value) => ids.map((m) => ({ label: label.get(m), value: value(m), extra: 0, cls: "" }));
    const byId = new Map(group.members.map((m) => [m.member_id, m]));
    const fact = (term, value, factId) => h("div", {}, h("dt", {}, term), h("dd", { id: factId }, value));
    const cmp = group.stickyd || {};
    const countAnswer = cmp.by_count ? cmp.by_count.members : null;
    const loadAnswer = cmp.by_load ? cmp.by_load.members : null;
    put(main, h("h1", {}, `Consumer group ${group.group_id} `, h("span", { class: "muted" }, "(watched cluster)")),
      h("div", { class: "card" }, h("dl", { class: "facts" },
        fact("kind", group.kind, "fact-kind"), fact("state", group.state, "fact-state"),
        fact("assignor", group.assignor || "-", "fact-assignor"),
        fact("generation", group.generation === null ? "-" : fmt(group.generation), "fact-generation"),
        fact("members", fmt(group.members.length), "fact-members"),
        fact("lag", fmt(group.total_lag), "fact-lag"), fact("records/s", fmt(group.total_rate), "fact-rate"))),
      clusterCompareCard(group),
      h("div", { class: "grid2" },
        h("div", { class: "card", id: "cluster-counts" }, h("h2", {}, "Partitions per member"), h("div", { class: "scroll" }, rowChart(bars((m) => byId.get(m).partitions)))),
        h("div", { class: "card", id: "cluster-loads" }, h("h2", {}, "Records/s per member"), h("div", { class: "scroll" }, rowChart(bars((m) => byId.get(m).load))))),
      countAnswer && loadAnswer ? h("div", { class: "grid2" },
        h("div", { class: "card", id: "cluster-stickyd-counts" }, h("h2", {}, "Partitions per member: stickyd, balance count"),
          h("div", { class: "scroll" }, rowChart(bars((m) => (countAnswer[m] || { count: 0 }).count)))),
        h("div", { class: "card", id: "cluster-stickyd-loads" }, h("h2", {}, "Records/s per member: stickyd, balance load"),
          h("div", { class: "scroll" }, rowChart(bars((m) => (loadAnswer[m] || { load: 0 }).load))))) : null,
      h("p", {}, h("a", { href: "#/cluster" }, "All groups of the cluster")));
    ready("cluster-group");
  }

  function clusterCompareCard(group) {
    const cmp = group.stickyd || {};
    const cell = (answer, key) => h("div", { "data-figure": `${answer ? answer.balance : "now"}.${key}` },
      answer ? fmt(key === "moves" ? answer.moves : answer.bottleneck[key]) : "-");
    const row = (name, key) => [h("div", {}, name), h("div", { "data-figure": `now.${key}` }, key === "moves" ? "0" : fmt(group.bottleneck[key])),
      cell(cmp.by_count, key), cell(cmp.by_load, key)];
    return h("div", { class: "card", id: "cluster-compare" }, h("h2", {}, "Now and stickyd's answers (nothing stored)"),
      h("div", { class: "compare compare3" }, h("div", { class: "head" }, ""), h("div", { class: "head" }, "now"),
        h("div", { class: "head" }, "stickyd, balance count"), h("div", { class: "head" }, "stickyd, balance load"),
        row("most partitions", "count"), row("most records/s", "load"), row("moves", "moves")),
      cmp.reason ? h("p", { class: "muted", id: "cluster-compare-reason" }, cmp.reason) : null);
  }

  // ---- one group: what it holds ------------------------------------------------------------

  function partsOf(owned) {
    return Array.isArray(owned) ? owned.length : sum(Object.values(owned || {}).map((p) => p.length));
  }

  function groupModel(state, timeline) {
    const consumer = state.kind === "consumer";
    const owned = consumer ? state.target || state.assignment : state.assignment;
    const leaving = new Map(state.leaving.map((m) => [m.id, m]));
    const held = new Map(state.held.map((m) => [m.id, m]));
    const members = Object.keys(state.members).sort(byName).concat([...held.keys()].sort(byName));
    const ownedBy = (m) => (held.has(m) ? held.get(m).assignment : owned[m] || {});
    const load = (m) => (consumer ? partsOf(ownedBy(m)) : (ownedBy(m).active || []).length);
    const standby = (m) => (consumer ? 0 : (ownedBy(m).standby || []).length + (ownedBy(m).warmup || []).length);
    const items = consumer ? Object.keys(state.topics).sort(byName) : streamsSubtopologies(state);
    const last = timeline.length ? timeline[timeline.length - 1] : null;
    return { state, timeline, consumer, members, leaving, held, ownedBy, load, standby, items, last };
  }

  function streamsSubtopologies(state) {
    const seen = new Set();
    for (const tasks of Object.values(state.assignment)) {
      for (const task of tasks.active || []) seen.add(task.slice(0, task.lastIndexOf("_")));
    }
    return [...seen].sort((a, b) => Number(a) - Number(b) || byName(a, b));
  }

  async function showGroup(id, params) {
    let state, timeline;
    try {
      [state, timeline] = await Promise.all([api(`/v1/groups/${enc(id)}`), api(`/v1/groups/${enc(id)}/timeline?limit=100`)]);
    } catch (error) {
      return failed(error, `group ${id}`);
    }
    performance.mark("stickyd-data");
    const model = groupModel(state, timeline.generations);
    put(main,
      h("h1", {}, `${model.consumer ? "Consumer group" : "Streams application"} ${state.group_id}`),
      factsCard(model), rosterCard(model),
      h("div", { class: "grid2" }, loadCard(model), gridCard(model)),
      historyCard(model),
      whatIfCard(model),
      whyCard(model));
    wirePicks();
    ready("group");
    if (params.get("topic") && params.get("partition")) runWhy(model, params.get("topic"), params.get("partition"));
  }

  // a click on a member's bar puts it among the members that leave (what if), or takes it out
  // again; a click on a row of the grid picks that topic for "why"
  function wirePicks() {
    document.getElementById("loads").addEventListener("click", (event) => {
      const bar = event.target.closest("[data-pick]");
      const remove = document.getElementById("wi-remove");
      if (!bar || !remove) return;
      const chosen = new Set(listOf(remove.value));
      const member = bar.getAttribute("data-pick");
      if (chosen.has(member)) chosen.delete(member);
      else chosen.add(member);
      remove.value = [...chosen].join(", ");
    });
    const grid = document.getElementById("assignment-grid");
    if (!grid) return;
    grid.addEventListener("click", (event) => {
      const row = event.target.closest("tr[data-item]");
      if (row) document.getElementById("why-topic").value = row.dataset.item;
    });
  }

  function factsCard(model) {
    const { state, consumer, members, load, last } = model;
    const total = sum(members.map(load));
    const loads = members.filter((m) => !model.leaving.has(m)).map(load);
    const fact = (term, value, id) => h("div", {}, h("dt", {}, term), h("dd", { id }, value));
    return h("div", { class: "card" }, h("dl", { class: "facts" },
      fact("generation", fmt(state.generation), "fact-generation"),
      fact(consumer ? "members" : "clients", fmt(Object.keys(state.members).length), "fact-members"),
      fact(consumer ? "partitions" : "active tasks", fmt(total), "fact-partitions"),
      fact("balance (min-max)", loads.length ? `${fmt(Math.min(...loads))}-${fmt(Math.max(...loads))}` : "-", "fact-balance"),
      fact("last rebalance", last ? `${fmt(last.moves)} moves, ${last.solver}` : "-", "fact-last"),
      fact("answer", answerBadge(last), "fact-answer"),
      fact("retained generations", fmt(state.history), "fact-history"),
      fact("grace", `${fmt(state.grace_ms)} ms`, "fact-grace"),
      fact("updated", when(state.updated_at), "fact-updated")));
  }

  function rosterCard(model) {
    const { last } = model;
    const chips = [];
    for (const m of last ? last.newcomers : []) chips.push(h("span", { class: "badge new", "data-status": "new" }, `${m}: new`));
    for (const m of model.leaving.values()) {
      chips.push(h("span", { class: "badge warn", "data-status": "leaving" }, `${m.id}: leaving, ${m.empty ? "empty, safe to stop" : "draining"}`));
    }
    for (const m of model.held.values()) {
      chips.push(h("span", { class: "badge held", "data-status": "held" }, `${m.id}: lost, held until ${when(m.until)}`));
    }
    for (const m of last ? last.departed : []) chips.push(h("span", { class: "badge bad", "data-status": "departed" }, `${m}: departed`));
    return h("div", { class: "card", id: "roster" }, h("h2", {}, `${model.consumer ? "Members" : "Clients"} new, leaving or in grace`),
      chips.length ? h("div", { class: "chips" }, chips) : h("p", { class: "muted" }, "None: every member of the last round stays."));
  }

  // ---- charts ------------------------------------------------------------------------------

  function loadCard(model) {
    const { members, load, standby, consumer } = model;
    const bars = members.map((m) => ({
      label: m, value: load(m), extra: standby(m),
      cls: model.held.has(m) ? "held" : model.leaving.has(m) ? "leaving" : "",
    }));
    const legend = h("div", { class: "legend" }, h("span", {}, h("i", { class: "sw-accent" }), consumer ? "partitions" : "active tasks"),
      consumer ? null : h("span", {}, h("i", { class: "sw-standby" }), "standby and warm-up"),
      h("span", {}, h("i", { class: "sw-warn" }), "leaving"), h("span", {}, h("i", { class: "sw-held" }), "held in grace"));
    return h("div", { class: "card", id: "loads" }, h("h2", {}, `Load per ${consumer ? "member" : "client"}`),
      h("div", { class: "scroll" }, bars.length > MANY_MEMBERS ? columnChart(bars) : rowChart(bars)), legend,
      h("p", { class: "muted" }, `Click a bar to try that ${consumer ? "member" : "client"} leaving (what if).`));
  }

  function rowChart(bars) {
    const rowH = 20, labelW = 130, barW = 380, top = max1(bars.map((b) => b.value + b.extra));
    const svg = s("svg", { viewBox: `0 0 ${labelW + barW + 60} ${bars.length * rowH + 4}`, class: "chart", role: "img", "aria-label": "load per member" });
    bars.forEach((bar, i) => {
      const y = i * rowH + 2, w = (bar.value / top) * barW, w2 = (bar.extra / top) * barW;
      svg.append(s("text", { x: labelW - 6, y: y + 13, "text-anchor": "end", "data-pick": bar.label }, bar.label),
        s("rect", { class: `bar ${bar.cls}`, x: labelW, y, width: Math.max(w, 0.5), height: rowH - 5, "data-member": bar.label, "data-pick": bar.label }, s("title", {}, `${bar.label}: ${bar.value}`)),
        bar.extra ? s("rect", { class: "bar standby", x: labelW + w, y, width: w2, height: rowH - 5, "data-pick": bar.label }) : null,
        s("text", { x: labelW + w + w2 + 5, y: y + 13 }, bar.extra ? `${fmt(bar.value)} + ${fmt(bar.extra)}` : fmt(bar.value)));
    });
    return svg;
  }

  function columnChart(bars) {
    const width = 560, height = 180, left = 44, bottom = 18, top = max1(bars.map((b) => b.value + b.extra));
    const step = (width - left) / bars.length, plot = height - bottom - 6;
    const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": "load per member" });
    const y = (v) => height - bottom - (v / top) * plot;
    svg.append(s("line", { class: "axis", x1: left, x2: width, y1: y(0), y2: y(0) }),
      s("text", { x: left - 4, y: y(top) + 4, "text-anchor": "end" }, fmt(top)), s("text", { x: left - 4, y: y(0), "text-anchor": "end" }, "0"),
      s("text", { x: left, y: height - 3 }, `${fmt(bars.length)} members, sorted by id`));
    bars.forEach((bar, i) => {
      svg.append(s("rect", { class: `bar ${bar.cls}`, x: left + i * step, y: y(bar.value), width: Math.max(step * 0.8, 0.4), height: y(0) - y(bar.value), "data-member": bar.label, "data-pick": bar.label },
        s("title", {}, `${bar.label}: ${bar.value}${bar.extra ? ` + ${bar.extra}` : ""}`)));
    });
    return svg;
  }

  const max1 = (values) => Math.max(1, ...values);

  function seriesChart(id, title, points, opts) {
    const width = 560, height = 150, left = 58, bottom = 20, n = Math.max(points.length, 1);
    const step = (width - left - 8) / n, plot = height - bottom - 8;
    const top = opts.top || max1(points.map((p) => Math.max(...p.values)));
    const y = (v) => height - bottom - (v / top) * plot;
    const x = (i) => left + i * step + step / 2;
    const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, "data-points": points.length });
    svg.append(s("line", { class: "axis", x1: left, x2: width - 8, y1: y(0), y2: y(0) }),
      s("text", { x: left - 4, y: y(top) + 4, "text-anchor": "end" }, opts.label(top)),
      s("text", { x: left - 4, y: y(0), "text-anchor": "end" }, opts.label(0)));
    if (points.length) {
      svg.append(s("text", { x: left, y: height - 4 }, `gen ${points[0].generation}`),
        s("text", { x: width - 8, y: height - 4, "text-anchor": "end" }, `gen ${points[points.length - 1].generation}`));
    }
    opts.draw(svg, points, { x, y, step });
    return h("div", { class: "card", id }, h("h2", {}, title), svg, opts.legend || null);
  }

  function drawBars(cls) {
    return (svg, points, { x, y, step }) => points.forEach((p) => svg.append(
      s("rect", { class: `bar ${typeof cls === "function" ? cls(p) : cls}`, x: x(p.index) - step * 0.4, y: y(p.values[0]), width: Math.max(step * 0.8, 0.6), height: Math.max(y(0) - y(p.values[0]), 0) },
        s("title", {}, `generation ${p.generation}: ${p.text}`))));
  }

  function drawLines(classes) {
    return (svg, points, { x, y }) => classes.forEach((cls, k) => {
      const path = points.map((p, i) => `${i ? "L" : "M"}${x(p.index).toFixed(1)},${y(p.values[k]).toFixed(1)}`).join("");
      if (path) svg.append(s("path", { class: `line ${cls}`, d: path }));
    });
  }

  function historyCard(model) {
    const gens = model.timeline;
    const pts = (values, text) => gens.map((g, index) => ({ index, generation: g.generation, values: values(g), text: text(g) }));
    const fallbacks = gens.filter((g) => g.fallback).length, proven = gens.filter((g) => g.optimal).length;
    const answerClass = (p) => (gens[p.index].fallback ? "bad" : gens[p.index].optimal ? "" : "leaving");
    return h("div", {}, h("h2", { class: "section-title" }, `History: ${fmt(gens.length)} retained generations`), h("div", { class: "grid2 charts", id: "history" },
      seriesChart("chart-moves", "Moves per rebalance", pts((g) => [g.moves], (g) => `${fmt(g.moves)} moves`), { label: fmt, draw: drawBars("") }),
      seriesChart("chart-balance", "Balance (min and max load)", pts((g) => [g.max_load, g.min_load], (g) => `${g.min_load}-${g.max_load}`),
        { label: fmt, draw: drawLines(["max", "min"]), legend: h("div", { class: "legend" }, h("span", {}, h("i", { class: "sw-bad" }), "max"), h("span", {}, h("i", { class: "sw-good" }), "min")) }),
      seriesChart("chart-time", "Solve time", pts((g) => [g.time_ms], (g) => millis(g.time_ms)), { label: millis, draw: drawLines([""]) }),
      seriesChart("chart-answers", `Fallbacks: ${fmt(fallbacks)} of ${fmt(gens.length)} (${fmt(proven)} proven)`, pts(() => [1], (g) => `${g.solver}${g.fallback ? ", fallback" : g.optimal ? ", proven" : ""}`),
        { top: 1, label: () => "", draw: drawBars(answerClass), legend: h("div", { class: "legend" }, h("span", {}, h("i", { class: "sw-accent" }), "proven"), h("span", {}, h("i", { class: "sw-warn" }), "not proven"), h("span", {}, h("i", { class: "sw-bad" }), "fallback")) })));
  }

  // ---- the assignment at a glance: topics x members ------------------------------------------

  function cellCounts(model) {
    const counts = new Map(model.items.map((item) => [item, new Map()]));
    for (const m of model.members) {
      const owned = model.ownedBy(m);
      if (model.consumer) {
        for (const [topic, parts] of Object.entries(owned)) if (counts.has(topic)) counts.get(topic).set(m, parts.length);
      } else {
        for (const task of owned.active || []) {
          const sub = counts.get(task.slice(0, task.lastIndexOf("_")));
          if (sub) sub.set(m, (sub.get(m) || 0) + 1);
        }
      }
    }
    return counts;
  }

  function gridCard(model) {
    const counts = cellCounts(model);
    const what = model.consumer ? "topics x members" : "subtopologies x clients (active tasks)";
    const body = model.members.length > MANY_MEMBERS ? heatmap(model, counts) : matrix(model, counts);
    return h("div", { class: "card", id: "assignment" }, h("h2", {}, `Assignment: ${what}`), h("div", { class: "scroll" }, body));
  }

  function matrix(model, counts) {
    return h("table", { class: "matrix", id: "assignment-grid" },
      h("thead", {}, h("tr", {}, h("th", {}, model.consumer ? "topic" : "subtopology"), model.members.map((m) => h("th", { class: "member" }, m)))),
      h("tbody", {}, model.items.map((item) => h("tr", { "data-item": item }, h("th", {}, item),
        model.members.map((m) => {
          const n = counts.get(item).get(m) || 0;
          return h("td", { class: n ? "" : "zero", "data-member": m, title: `${item} on ${m}: ${n}` }, n);
        })))));
  }

  function heatmap(model, counts) {
    const cellW = Math.max(1, Math.min(6, Math.floor(1100 / model.members.length))), cellH = 14;
    const canvas = h("canvas", { class: "heat", id: "assignment-heatmap", width: model.members.length * cellW, height: model.items.length * cellH });
    const top = max1([...counts.values()].flatMap((row) => [...row.values()]));
    const paint = canvas.getContext("2d");
    model.items.forEach((item, r) => model.members.forEach((m, c) => {
      const n = counts.get(item).get(m) || 0;
      paint.fillStyle = n ? `rgba(47,111,219,${0.15 + 0.85 * (n / top)})` : "#f2f4f7";
      paint.fillRect(c * cellW, r * cellH, cellW, cellH - 1);
    }));
    canvas.addEventListener("mousemove", (event) => {
      const c = Math.floor(event.offsetX / cellW), r = Math.floor(event.offsetY / cellH);
      const item = model.items[r], m = model.members[c];
      canvas.title = item && m ? `${item} on ${m}: ${counts.get(item).get(m) || 0}` : "";
    });
    return h("div", {}, h("p", { class: "muted" }, `${fmt(model.items.length)} rows x ${fmt(model.members.length)} members; darker is more (at most ${fmt(top)}). Hover for a cell.`), canvas);
  }

  // ---- what if -------------------------------------------------------------------------------

  const listOf = (text) => text.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

  function whatIfCard(model) {
    const strategy = (model.state.stats && model.state.stats.strategy) || "optimal";
    const strategies = model.consumer ? ["optimal", "sticky", "range", "roundrobin"] : ["optimal", "sticky", "greedy"];
    const who = model.consumer ? "members" : "clients";
    const result = h("div", { id: "wi-result" });
    const form = h("form", { class: "inline", id: "what-if" },
      h("label", {}, `${who} leave`, h("input", { id: "wi-remove", placeholder: "ids, comma-separated", size: 22 })),
      h("label", {}, model.consumer ? "members join (every topic)" : "clients join", h("input", { id: "wi-add", placeholder: "new ids, comma-separated", size: 22 })),
      h("label", {}, model.consumer ? "partitions added to" : "tasks added to subtopology", h("select", { id: "wi-topic" }, model.items.map((t) => h("option", { value: t }, t)))),
      h("label", {}, "how many", h("input", { id: "wi-partitions", type: "number", min: 0, value: 0, size: 6 })),
      h("label", {}, "strategy", h("select", { id: "wi-strategy" },
        strategies.map((x) => h("option", { value: x, selected: x === strategy }, x)))),
      h("button", { type: "submit", id: "wi-run" }, "Try"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      runWhatIf(model, result);
    });
    return h("div", { class: "card", id: "what-if-card" }, h("h2", {}, "What if"),
      h("p", { class: "muted" }, "stickyd's answer to the changed group beside the current assignment. Nothing is stored."), form, result);
  }

  async function runWhatIf(model, result) {
    const value = (id) => document.getElementById(id).value;
    const body = { remove: listOf(value("wi-remove")), add: listOf(value("wi-add")).map((id) => ({ id })), strategy: value("wi-strategy") };
    const more = Number(value("wi-partitions"));
    if (more > 0) body.add_partitions = { [value("wi-topic")]: more };
    put(result, h("p", { class: "muted" }, "Solving..."));
    delete document.body.dataset.whatIf;
    try {
      showWhatIf(result, await api(`/v1/groups/${enc(model.state.group_id)}/what-if`, body));
    } catch (error) {
      put(result, h("div", { class: "notice error", id: "wi-error" }, String(error.message || error)));
    }
    document.body.dataset.whatIf = "done";
  }

  function showWhatIf(result, answer) {
    const row = (label, key, lowerIsBetter) => {
      const now = answer.current[key], then = answer.proposed[key];
      const better = lowerIsBetter === null || then === now ? "" : (then < now) === lowerIsBetter ? "better" : "worse";
      return [h("div", {}, label), h("div", { "data-figure": `current.${key}` }, fmt(now)), h("div", { class: better, "data-figure": `proposed.${key}` }, fmt(then))];
    };
    const changed = answer.members.filter((m) => m.gained || m.lost).slice(0, 25);
    put(result,
      h("div", { class: "compare" }, h("div", { class: "head" }, ""), h("div", { class: "head" }, `now (generation ${answer.generation})`), h("div", { class: "head" }, `stickyd's answer (${answer.strategy})`),
        row(answer.kind === "consumer" ? "partitions" : "active tasks", "partitions", null), row(answer.kind === "consumer" ? "members" : "clients", "members", null), row("min load", "min_load", false), row("max load", "max_load", true), row("moves", "moves", true)),
      h("p", { id: "wi-answer" }, answerBadge(answer), ` ${answer.solver} in ${millis(answer.time_ms)}`),
      answer.warnings.length ? h("ul", { class: "muted" }, answer.warnings.slice(0, 5).map((w) => h("li", {}, w))) : null,
      changed.length ? h("div", { class: "scroll" }, h("table", { id: "wi-members" },
        h("thead", {}, h("tr", {}, [answer.kind === "consumer" ? "member" : "client", "now", "then", "gains", "loses"].map((x, i) => h("th", { class: i ? "num" : "" }, x)))),
        h("tbody", {}, changed.map((m) => h("tr", {}, h("td", {}, m.id), num(m.now), num(m.then), num(m.gained), num(m.lost)))))) : h("p", { class: "muted" }, answer.kind === "consumer" ? "No member's partitions change." : "No client's active tasks change."));
  }

  // ---- why ---------------------------------------------------------------------------------

  function whyCard(model) {
    const result = h("div", { id: "why-result", class: "why" });
    const form = h("form", { class: "inline", id: "why" },
      h("label", {}, model.consumer ? "topic" : "subtopology", h("select", { id: "why-topic" }, model.items.map((t) => h("option", { value: t }, t)))),
      h("label", {}, "partition", h("input", { id: "why-partition", type: "number", min: 0, value: 0, size: 6 })),
      h("button", { type: "submit", id: "why-run" }, "Why is it there?"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      runWhy(model, document.getElementById("why-topic").value, document.getElementById("why-partition").value);
    });
    return h("div", { class: "card", id: "why-card" }, h("h2", {}, model.consumer ? "Why is a partition where it is?" : "Why is a task where it is?"), form, result);
  }

  async function runWhy(model, topic, partition) {
    const result = document.getElementById("why-result");
    delete document.body.dataset.why;
    put(result, h("p", { class: "muted" }, "Reading the history..."));
    try {
      const answer = await api(`/v1/groups/${enc(model.state.group_id)}/explain?topic=${enc(topic)}&partition=${enc(partition)}`);
      put(result, h("p", { class: "summary", id: "why-summary" }, answer.summary),
        answer.rack ? h("p", { id: "why-rack" }, answer.rack) : null,
        h("table", { id: "why-steps" }, h("thead", {}, h("tr", {}, h("th", {}, "generations"), h("th", {}, "owner"), h("th", {}, "why"))),
          h("tbody", {}, runsOf(answer.steps).map((run) => h("tr", { "data-reason": run.reason },
            h("td", {}, run.first === run.last ? `${run.first}` : `${run.first}-${run.last}`), h("td", {}, run.owner || "-"), h("td", {}, run.words))))));
    } catch (error) {
      put(result, h("div", { class: "notice error", id: "why-error" }, String(error.message || error)));
    }
    document.body.dataset.why = "done";
  }

  function runsOf(steps) {
    // a step kept by the same owner joins the run before it: "moved to b ... (kept since)"
    const runs = [];
    for (const step of steps) {
      const last = runs[runs.length - 1];
      if (last && step.reason === "kept" && step.owner === last.owner) {
        last.last = step.generation;
        if (last.reason !== "kept" && !last.words.endsWith("then kept")) last.words += "; then kept";
        continue;
      }
      runs.push({ first: step.generation, last: step.generation, owner: step.owner, reason: step.reason, words: step.words });
    }
    return runs;
  }

  // ---- the token and the routes ------------------------------------------------------------

  function showToken() {
    document.getElementById("token-state").textContent = token() ? "token set for this tab" : "no token";
  }

  document.getElementById("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("token-input");
    if (input.value.trim()) sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = "";
    showToken();
    route();
  });
  document.getElementById("token-forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showToken();
    route();
  });

  function route() {
    delete document.body.dataset.ready;
    const path = location.hash.replace(/^#/, "") || "/";
    const group = path.match(/^\/group\/([^?]+)(?:\?(.*))?$/);
    if (group) return showGroup(decodeURIComponent(group[1]), new URLSearchParams(group[2] || ""));
    if (path === "/cluster") return showCluster();
    const watched = path.match(/^\/cluster\/(.+)$/);
    if (watched) return showClusterGroup(decodeURIComponent(watched[1]));
    return showGroups();
  }

  window.addEventListener("hashchange", route);
  showToken();
  route();
})();
