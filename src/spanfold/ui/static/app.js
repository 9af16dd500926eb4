// spanfold ui: the page. Trace content is only ever put on the page as text (textContent / text nodes), never
// parsed as HTML; images are shown only from data: URLs (the page makes no request outside its server).
"use strict";

const POLL_MS = 1500;
const PAGE = 100;
const FOLD_CHARS = 600;
const COLUMNS = [
  ["time", "Time"], ["name", "Agent"], ["models", "Models"], ["steps", "Steps"], ["calls", "Tool calls"],
  ["errors", "Errors"], ["tokens_in", "Tokens in"], ["tokens_out", "Tokens out"], ["duration", "Duration"],
  ["status", "Status"],
];

const STATUSES = ["complete", "error", "incomplete", "truncated"];

const state = {
  q: "", tool: "", model: "", status: "", errors: "", sort: "time", order: "desc", offset: 0,
  generation: -1, picked: [], view: "", timer: null,
};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.appendChild(typeof child === "string" || typeof child === "number"
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}

async function api(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return response.json();
}

function fmtMs(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} m ${Math.round((ms % 60000) / 1000)} s`;
}

function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function pretty(value) {
  if (typeof value === "string") return value;
  try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
}

function folded(label, text) {
  const pre = el("pre", {}, text);
  if (text.length <= FOLD_CHARS && text.split("\n").length <= 12) return el("div", {}, pre);
  return el("details", {}, el("summary", {}, `${label} (${text.length.toLocaleString()} chars)`), pre);
}

function setStatus(text) { document.getElementById("status").textContent = text; }

// ---- the run list -----------------------------------------------------------------------------------------------
function listParams() {
  const p = new URLSearchParams();
  for (const k of ["q", "tool", "model", "status", "errors", "sort", "order"]) if (state[k]) p.set(k, state[k]);
  p.set("offset", state.offset);
  p.set("limit", PAGE);
  return p.toString();
}

function select(name, label, choices, current) {
  const s = el("select", { id: `f-${name}`, "aria-label": label,
    onchange: (e) => { state[name] = e.target.value; state.offset = 0; loadList(); } },
  el("option", { value: "" }, label));
  for (const [value, text] of choices) s.appendChild(el("option", { value, selected: value === current }, text));
  return s;
}

function renderFilters(facets) {
  let timer = null;
  const text = el("input", { id: "f-q", type: "search", placeholder: "Filter: agent, model, tool, trace id, prompt…",
    value: state.q, size: 40,
    oninput: (e) => { clearTimeout(timer); timer = setTimeout(() => { state.q = e.target.value; state.offset = 0; loadList(); }, 250); } });
  const compare = el("button", { id: "compare", disabled: state.picked.length !== 2,
    onclick: () => { location.hash = `#/compare/${state.picked[0]}/${state.picked[1]}`; } },
  `Compare ${state.picked.length}/2`);
  return el("div", { class: "filters" }, text,
    select("tool", "any tool", facets.tools.map((t) => [t, t]), state.tool),
    select("model", "any model", facets.models.map((m) => [m, m]), state.model),
    select("status", "any status", STATUSES.map((s) => [s, s]), state.status),
    select("errors", "errors or not", [["yes", "with errors"], ["no", "without errors"]], state.errors),
    compare);
}

function runRow(run) {
  const pick = el("input", { type: "checkbox", class: "pick", checked: state.picked.includes(run.id),
    "aria-label": "pick to compare",
    onclick: (e) => {
      e.stopPropagation();
      state.picked = state.picked.filter((id) => id !== run.id);
      if (e.target.checked) state.picked = [...state.picked, run.id].slice(-2);
      loadList();
    } });
  const tools = el("div", { class: "tools" },
    Object.entries(run.tools).map(([name, n]) => el("span", {}, n > 1 ? `${name} ×${n}` : name)));
  const tr = el("tr", { class: `run${run.errors ? " has-errors" : ""}`, "data-id": run.id,
    onclick: () => { location.hash = `#/run/${run.id}`; } },
  el("td", {}, pick),
  el("td", { title: `${run.file}:${run.line}` }, fmtTime(run.start) || `${run.file}:${run.line}`),
  el("td", {}, run.name || el("span", { class: "muted" }, run.preview.slice(0, 60) || "—")),
  el("td", {}, run.models.join(", ")),
  el("td", { class: "num" }, run.steps),
  el("td", {}, el("div", { class: "num" }, run.calls), tools),
  el("td", { class: "num errors" }, run.errors),
  el("td", { class: "num" }, run.tokens_in.toLocaleString()),
  el("td", { class: "num" }, run.tokens_out.toLocaleString()),
  el("td", { class: "num" }, fmtMs(run.duration_ms)),
  el("td", { class: `status-${run.status}`, title: errorTitle(run.error) }, run.status));
  return tr;
}

function renderList(data) {
  const main = document.getElementById("main");
  const head = el("tr", {}, el("th", {}, ""), COLUMNS.map(([key, label]) => el("th", {
    class: state.sort === key ? `sorted ${state.order}` : "", "data-sort": key,
    onclick: () => {
      if (state.sort === key) state.order = state.order === "desc" ? "asc" : "desc";
      else { state.sort = key; state.order = "desc"; }
      loadList();
    } }, label)));
  const body = el("tbody", { id: "runs" }, data.runs.map(runRow));
  const first = data.total ? data.offset + 1 : 0;
  const last = data.offset + data.runs.length;
  const pager = el("div", { class: "pager" },
    el("button", { disabled: data.offset === 0, onclick: () => { state.offset = Math.max(0, state.offset - PAGE); loadList(); } }, "‹ Newer"),
    el("span", { id: "count" }, `${first.toLocaleString()}–${last.toLocaleString()} of ${data.total.toLocaleString()} runs` +
      (data.total !== data.all ? ` (${data.all.toLocaleString()} in all)` : "")),
    el("button", { disabled: last >= data.total, onclick: () => { state.offset += PAGE; loadList(); } }, "Older ›"));
  const focused = document.activeElement && document.activeElement.id;
  main.replaceChildren(renderFilters(data.facets), el("table", {}, el("thead", {}, head), body), pager);
  if (focused === "f-q") {
    const box = document.getElementById("f-q");
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }
}

async function loadList() {
  try {
    const data = await api(`/api/runs?${listParams()}`);
    state.generation = data.generation;
    if (state.view === "list") renderList(data);
    setStatus(`${data.all.toLocaleString()} runs · live`);
  } catch (e) { setStatus(`cannot load runs: ${e.message}`); }
}

// ---- one run ----------------------------------------------------------------------------------------------------
function chunks(content) {
  if (content === null || content === undefined) return [];
  if (typeof content === "string") return [el("div", { class: "text" }, content)];
  return content.map((c) => {
    const kind = c.type || "";
    if (kind === "text") return el("div", { class: "text" }, String(c.text ?? ""));
    if (kind === "reasoning" || kind === "thinking") {
      return el("details", { class: "reasoning" }, el("summary", {}, "reasoning"),
        el("div", { class: "text" }, String(c.text ?? c.thinking ?? c.content ?? "")));
    }
    if (kind.includes("image")) {
      let url = c.image_url ?? c.url ?? "";
      if (url && typeof url === "object") url = url.url ?? "";
      url = String(url);
      if (/^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/.test(url)) {
        return el("img", { class: "trace-image", src: url, alt: "image from the trace" });
      }
      return el("div", { class: "muted" }, `[image: ${url.slice(0, 200) || "(no URL)"} — not loaded: only data: images are shown]`);
    }
    return folded(kind || "chunk", pretty(c));
  });
}

function errorTitle(error) {
  if (!error || typeof error !== "object") return null;
  return error.message ? `${error.type}: ${error.message}` : String(error.type ?? "error");
}

function errorBlock(error) {
  if (!error) return null;
  const text = typeof error === "object" ? `${error.type ?? "error"}: ${error.message ?? pretty(error)}` : String(error);
  return el("div", { class: "err-text" }, text);
}

function toolCard(call, output) {
  const fn = call.function || {};
  const failed = output && output.error;
  const card = el("div", { class: `card${failed ? " error" : ""}`, id: output ? `event-${output.n}` : null },
    el("div", {}, el("span", { class: "tool-name" }, fn.name || "?"), " ",
      el("span", { class: "muted" }, call.id || "")),
    el("div", { class: "label" }, "arguments"),
    folded("arguments", pretty(fn.arguments ?? {})));
  if (output) {
    const took = output.metadata && output.metadata.duration_ms;
    card.appendChild(el("div", { class: "label" }, "output" + (took !== undefined ? ` · ${fmtMs(took)}` : "")));
    card.appendChild(errorBlock(output.error) || el("span"));
    const text = typeof output.content === "string" ? output.content : null;
    if (text !== null) card.appendChild(folded("output", text));
    else card.append(...chunks(output.content));
  } else {
    card.appendChild(el("div", { class: "label" }, "no output recorded"));
  }
  return card;
}

function conversation(events) {
  const outputs = new Map();
  for (const ev of events) if (ev.role === "tool" && ev.tool_call_id) outputs.set(ev.tool_call_id, ev);
  const used = new Set();
  const out = [];
  for (const ev of events) {
    if (ev.role === "tool" && used.has(ev)) continue;
    const box = el("div", { class: `msg ${ev.role}${ev.error ? " error" : ""}`, id: `event-${ev.n}` },
      el("div", { class: "role" }, ev.role === "tool" ? `tool output${ev.name ? " · " + ev.name : ""}` : ev.role,
        ev.timestamp ? el("span", { class: "muted" }, ` · ${fmtTime(ev.timestamp)}`) : null));
    box.appendChild(errorBlock(ev.error) || el("span"));
    const reasoning = ev.metadata && ev.metadata.reasoning;
    if (reasoning) {
      box.appendChild(el("details", { class: "reasoning" }, el("summary", {}, "reasoning"),
        el("div", { class: "text" }, typeof reasoning === "string" ? reasoning : pretty(reasoning))));
    }
    box.append(...chunks(ev.content));
    for (const call of ev.tool_calls || []) {
      const output = call.id ? outputs.get(call.id) : undefined;
      if (output) used.add(output);
      box.appendChild(toolCard(call, output));
    }
    out.push(box);
  }
  return out;
}

function tokens(usage) {
  if (!usage || typeof usage !== "object") return "";
  return `${(usage.input_tokens || 0).toLocaleString()} in / ${(usage.output_tokens || 0).toLocaleString()} out`;
}

// The steps the metadata lists (each model call and tool run: start, duration, model or tool, tokens, error).
function metaSteps(run) {
  return run.meta.steps.map((s) => {
    const took = typeof s.duration_ms === "number" ? s.duration_ms : null;
    return {
      at: Date.parse(s.start) + (took || 0), took, kind: s.kind === "tool" ? "tool" : "model",
      label: s.kind === "tool" ? `tool ${s.name || s.call_id || ""}` : `model ${s.model || ""}`,
      error: s.error || null, tokens: s.kind === "tool" ? "" : tokens(s.usage),
      n: Number.isInteger(s.event) ? s.event + 1 : null,
    };
  });
}

// Older traces without steps in their metadata: the times their model outputs, tool outputs and errors carry.
function eventSteps(run) {
  const names = new Map();
  for (const ev of run.events) for (const c of ev.tool_calls || []) if (c.id) names.set(c.id, (c.function || {}).name);
  const steps = [];
  for (const ev of run.events) {
    if (!["assistant", "tool", "error"].includes(ev.role)) continue;  // the messages sent are no steps
    const at = Date.parse(ev.timestamp);
    const took = ev.metadata && typeof ev.metadata.duration_ms === "number" ? ev.metadata.duration_ms : null;
    if (isNaN(at) && took === null) continue;
    const kind = ev.role === "tool" ? "tool" : "model";
    const label = ev.role === "tool" ? `tool ${ev.name || names.get(ev.tool_call_id) || ev.tool_call_id || ""}`
      : `model ${(ev.metadata && ev.metadata.model) || ""}`;
    steps.push({ at, took, kind, label, error: ev.error || (ev.role === "error" ? {} : null),
      tokens: tokens(ev.metadata && ev.metadata.usage), n: ev.n });
  }
  return steps;
}

function timeline(run) {
  const start = Date.parse(run.meta && run.meta.start);
  const listed = run.meta && Array.isArray(run.meta.steps) && run.meta.steps.length > 0;
  const steps = listed ? metaSteps(run) : eventSteps(run);
  if (!steps.length) return [el("p", { class: "muted" }, "This trace records no step times.")];
  const origin = isNaN(start) ? Math.min(...steps.map((s) => (isNaN(s.at) ? Infinity : s.at - (s.took || 0)))) : start;
  const end = Math.max(...steps.map((s) => (isNaN(s.at) ? 0 : s.at)), origin + ((run.meta && run.meta.duration_ms) || 1));
  const span = Math.max(1, end - origin);
  return steps.map((s) => {
    const bar = el("div", { class: `bar ${s.kind}${s.error ? " error" : ""}`, title: errorTitle(s.error) });
    if (!isNaN(s.at) && isFinite(origin)) {
      const left = Math.max(0, s.at - (s.took || 0) - origin);
      bar.style.marginLeft = `${(100 * left) / span}%`;
      bar.style.width = `${Math.max(0.3, (100 * (s.took || 0)) / span)}%`;
    }
    const label = s.n !== null ? el("a", { href: `#/run/${run.row.id}/conversation/${s.n}` }, s.label)
      : el("span", {}, s.label);
    return el("div", { class: `bar-row step-${s.kind}` }, label, el("div", {}, bar),
      el("span", { class: "muted num" }, s.took !== null ? fmtMs(s.took) : ""),
      el("span", { class: s.error ? "err-text" : "muted" }, s.error ? errorTitle(s.error) || "error" : s.tokens));
  });
}

function renderRun(run, tab, anchor) {
  const row = run.row;
  const ended = row.status === "error" ? (run.meta && run.meta.error) || row.error : null;
  const tabs = [["conversation", "Conversation"], ["timeline", "Timeline"], ["metadata", "Metadata"], ["raw", "Raw events"]];
  const specBox = el("div", { id: "spec-box" }, el("div", { class: "label" }, "Expected messages for `spanfold check` (copied):"),
    el("pre", { id: "spec" }, run.spec || ""));
  const copy = el("button", { id: "copy-spec", disabled: !run.spec, onclick: async () => {
    specBox.classList.add("shown");
    try { await navigator.clipboard.writeText(run.spec); setStatus("spec copied"); } catch (e) { setStatus("select the spec below to copy it"); }
  } }, "Copy as spec");
  const head = el("div", { class: "run-head" },
    el("h1", {}, row.name || row.trace_id || `${row.file}:${row.line}`),
    el("div", { class: "facts" },
      el("span", { id: "run-status" }, el("b", {}, "status "), el("span", { class: `status-${row.status}` }, row.status),
        ended ? el("span", { class: "err-text" }, ` (${errorTitle(ended)})`) : null),
      el("span", {}, el("b", {}, "models "), row.models.join(", ") || "—"),
      el("span", {}, el("b", {}, "steps "), String(row.steps)),
      el("span", {}, el("b", {}, "tool calls "), String(row.calls)),
      el("span", { class: row.errors ? "err-text" : "" }, el("b", {}, "errors "), String(row.errors)),
      el("span", {}, el("b", {}, "tokens "), `${row.tokens_in.toLocaleString()} in / ${row.tokens_out.toLocaleString()} out`),
      el("span", {}, el("b", {}, "duration "), fmtMs(row.duration_ms) || "—"),
      el("span", {}, el("b", {}, "started "), fmtTime(row.start) || "—"),
      el("span", { class: "muted" }, `${row.file}:${row.line}`)),
    el("div", {}, copy, " ", el("a", { href: `#/run/${row.id}`, id: "permalink" }, "permalink")), specBox,
    el("div", { class: "tabs" }, tabs.map(([key, label]) => el("button", { class: key === tab ? "active" : "",
      "data-tab": key, onclick: () => { location.hash = `#/run/${row.id}/${key}`; } }, label))));
  let body;
  if (!run.events) body = [el("p", { class: "muted" }, "This record holds a summary only, no events.")];
  else if (tab === "timeline") body = [el("div", { class: "timeline" }, timeline(run))];
  else if (tab === "metadata") body = [el("pre", { id: "metadata" }, pretty(run.meta))];
  else if (tab === "raw") body = [el("pre", { id: "raw" }, pretty(run.raw))];
  else body = conversation(run.events);
  document.getElementById("main").replaceChildren(head, el("div", { id: "run-body" }, body));
  if (anchor) { const target = document.getElementById(`event-${anchor}`); if (target) target.scrollIntoView(); }
}

// ---- compare ----------------------------------------------------------------------------------------------------
function side(data, divergence, label) {
  const row = data.row;
  return el("div", {},
    el("h2", {}, el("a", { href: `#/run/${row.id}` }, `${label}: ${row.name || row.trace_id || row.file + ":" + row.line}`)),
    el("div", { class: "muted" }, `${row.calls} tool calls · ${row.status}`),
    el("ol", { class: "calls" }, data.calls.map((c, i) => el("li", {
      class: divergence === null || i < divergence ? "same" : i === divergence ? "diverge" : "" },
    el("span", { class: "tool-name" }, c.name), " ", el("code", {}, pretty(c.args ?? {}).replace(/\s+/g, " ").slice(0, 160)),
    c.error ? el("span", { class: "err-text" }, " error") : null))),
    divergence !== null && divergence >= data.calls.length ? el("p", { class: "diverge-end muted" }, `(no call ${divergence + 1})`) : null);
}

function renderCompare(data) {
  const d = data.divergence;
  const summary = d === null ? "The tool trajectories are the same." : `The trajectories part at call ${d + 1}.`;
  document.getElementById("main").replaceChildren(el("p", { id: "divergence" }, summary),
    el("div", { class: "compare" }, side(data.a, d, "A"), side(data.b, d, "B")));
}

// ---- routing and live updates -----------------------------------------------------------------------------------
async function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts[1]) {
      state.view = "run";
      const run = await api(`/api/run/${encodeURIComponent(parts[1])}`);
      renderRun(run, parts[2] || "conversation", parts[3]);
    } else if (parts[0] === "compare" && parts[1] && parts[2]) {
      state.view = "compare";
      renderCompare(await api(`/api/compare?a=${encodeURIComponent(parts[1])}&b=${encodeURIComponent(parts[2])}`));
    } else {
      state.view = "list";
      await loadList();
    }
  } catch (e) {
    document.getElementById("main").replaceChildren(el("p", { class: "err-text" }, `Cannot show this: ${e.message}`));
  }
}

async function poll() {
  try {
    const s = await api("/api/state");
    if (s.generation !== state.generation && state.view === "list") await loadList();
    else if (state.view !== "list") setStatus(`${s.total.toLocaleString()} runs · live`);
  } catch (e) { setStatus("server not reachable"); }
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  route();
  state.timer = setInterval(poll, POLL_MS);
});
