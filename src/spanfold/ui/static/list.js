// The run list: filters (kept in the page's URL: `#/?tool=search&user=u-42`), sortable columns, a page of runs at a
// time, two runs picked to compare.
import { api, el, errorTitle, fmtCost, fmtCount, fmtInt, fmtMs, fmtTime, localInput, setStatus, unreportedNote, utcTitle } from "./dom.js";
import { numbers } from "./numbers.js";

const PAGE = 100;
// [key, label, sortable, shown(facets)]: a column the runs may leave empty is shown when some run fills it.
const COLUMNS = [
  ["time", "Time", true], ["name", "Agent", true],
  ["service", "Service", true, (f) => f.services.length > 1],
  ["user", "User", true, (f) => f.users],
  ["tags", "Tags · prompt", false, (f) => f.tags.length > 0 || f.prompts.length > 0],
  ["scores", "Scores", false, (f) => f.scores.length > 0],
  ["io", "Input / output", false], ["models", "Models", true],
  ["providers", "Provider", true, (f) => (f.providers || []).length > 0],
  ["steps", "Steps", true], ["calls", "Tool calls", true],
  ["errors", "Errors", true], ["tokens_in", "Tokens in", true], ["tokens_out", "Tokens out", true],
  ["cost", "Cost", true, (f) => f.priced], ["duration", "Duration", true], ["status", "Status", true],
];
const STATUSES = ["complete", "error", "incomplete", "truncated", "unknown"];

//: The query's parameters the list keeps (the server's `spanfold.ui.query`); `from` and `to` are UTC ISO times.
const FILTERS = ["q", "tool", "model", "provider", "agent", "service", "status", "errors", "conversation", "user", "tag", "prompt",
  "score", "from", "to", "copies"];
const DEFAULTS = { sort: "time", order: "desc" };

export const list = {
  q: "", tool: "", model: "", provider: "", agent: "", service: "", status: "", errors: "", conversation: "", user: "", tag: "",
  prompt: "", score: "", from: "", to: "", copies: "", sort: "time", order: "desc", offset: 0, generation: -1, picked: [],
  current: -1, total: 0,
};

// The filters on now, by name.
export function filtersOn() {
  return FILTERS.filter((k) => list[k]);
}

// The list's filters, order and page as the page's URL keeps them (defaults left out).
export function urlQuery() {
  const p = new URLSearchParams();
  for (const k of FILTERS) if (list[k]) p.set(k, list[k]);
  for (const [k, v] of Object.entries(DEFAULTS)) if (list[k] !== v) p.set(k, list[k]);
  if (list.offset) p.set("offset", list.offset);
  return p.toString();
}

// The list's state taken from a URL's query (what is not there: its default), as a reload or a shared link gives it.
export function fromUrl(query) {
  const p = new URLSearchParams(query || "");
  for (const k of FILTERS) list[k] = p.get(k) || "";
  for (const [k, v] of Object.entries(DEFAULTS)) list[k] = p.get(k) || v;
  list.offset = Math.max(0, Number(p.get("offset")) || 0);
}

// The page's URL made to say the list's state (in place: no history entry per key typed).
function keepInUrl() {
  const query = urlQuery();
  const hash = `#/${query ? `?${query}` : ""}`;
  if (location.hash !== hash && !location.hash.startsWith("#/run") && !location.hash.startsWith("#/session")) {
    history.replaceState(null, "", hash);
  }
  document.querySelectorAll("#nav a").forEach((a) => {
    a.setAttribute("href", `#/${a.dataset.nav === "sessions" ? "sessions" : ""}${query ? `?${query}` : ""}`);
  });
}

// Set filter `name` (from the filters, or a link such as a session's) and show the list again from its first page.
export function setFilter(name, value) {
  list[name] = value;
  list.offset = 0;
  list.current = -1;
  loadList();
}

// The list's query (its filters, order and page) as the API's parameters (the sessions take the same filters).
export function listParams() {
  const p = new URLSearchParams();
  for (const k of [...FILTERS, "sort", "order"]) if (list[k]) p.set(k, list[k]);
  p.set("offset", list.offset);
  p.set("limit", PAGE);
  return p.toString();
}

function select(name, label, choices, current) {
  const s = el("select", { id: `f-${name}`, "aria-label": label, onchange: (e) => setFilter(name, e.target.value) },
  el("option", { value: "" }, label));
  for (const [value, text] of choices) s.appendChild(el("option", { value, selected: value === current }, text));
  return s;
}

// How a run ended, as its row says it: an error in red, a run that ended normally after errors on the way not in
// green, a record without metadata "unknown" (nothing says how it ended).
export function statusCell(run, tag) {
  const withErrors = run.status === "complete" && run.errors > 0;
  const text = withErrors ? `complete (${run.errors} error${run.errors > 1 ? "s" : ""})` : run.status;
  const title = run.status === "unknown" ? "no metadata says how this run ended"
    : withErrors ? "ended normally, after errors on the way" : errorTitle(run.error);
  return el(tag, { class: `status status-${run.status}${withErrors ? " with-errors" : ""}`, title }, text);
}

// A text filter, applied a moment after the typing stops.
function typed(name, attrs) {
  let timer = null;
  return el("input", { id: `f-${name}`, type: "search", value: list[name], ...attrs,
    oninput: (e) => { clearTimeout(timer); timer = setTimeout(() => setFilter(name, e.target.value), 250); } });
}

// A time filter, in this browser's local time as the list shows it (the URL keeps it in UTC).
function when(name, label) {
  return el("label", { class: "muted when", title: "when the run started (local time, as the list shows it)" }, `${label} `,
    el("input", { id: `f-${name}`, type: "datetime-local",
    value: localInput(list[name]), "aria-label": `started ${label} (local time)`,
    onchange: (e) => {
      const at = e.target.value ? new Date(e.target.value) : null;
      setFilter(name, at && !isNaN(at) ? at.toISOString() : "");
    } }));
}

function filters(facets, copies) {
  const compare = el("button", { id: "compare", disabled: list.picked.length !== 2,
    onclick: () => { location.hash = `#/compare/${encodeURIComponent(list.picked[0])}/${encodeURIComponent(list.picked[1])}`; } },
  `Compare ${list.picked.length}/2`);
  const named = (values) => values.map((v) => [v, v]);
  return el("div", { class: "filters" },
    typed("q", { placeholder: "Search runs: messages, tool arguments and outputs, agent, model, trace id…", size: 48,
      "aria-label": "search the runs" }),
    select("tool", "any tool", named(facets.tools), list.tool),
    select("model", "any model", named(facets.models), list.model),
    (facets.providers || []).length > 1 || list.provider
      ? select("provider", "any provider", named(facets.providers || []), list.provider) : null,
    facets.agents.length ? select("agent", "any agent", named(facets.agents), list.agent) : null,
    facets.services.length > 1 || list.service ? select("service", "any service", named(facets.services), list.service) : null,
    select("status", "any status", STATUSES.map((s) => [s, s]), list.status),
    select("errors", "errors or not", [["yes", "with errors"], ["no", "without errors"]], list.errors),
    when("from", "from"), when("to", "to"),
    facets.conversations || list.conversation ? typed("conversation", { placeholder: "conversation / session id", size: 22,
      "aria-label": "conversation or session id" }) : null,
    facets.users || list.user ? typed("user", { placeholder: "user id", size: 14, "aria-label": "user id" }) : null,
    facets.tags.length || list.tag ? select("tag", "any tag", named(facets.tags), list.tag) : null,
    facets.prompts.length || list.prompt ? select("prompt", "any prompt", prompts(facets.prompts), list.prompt) : null,
    facets.scores.length || list.score ? select("score", "scored or not", facets.scores.map((n) => [n, `scored ${n}`]), list.score) : null,
    copies || list.copies ? el("label", { class: "muted", title: "the same run in other files (spanfold convert's copies)" },
      el("input", { type: "checkbox", id: "f-copies", checked: list.copies === "show",
        onchange: (e) => setFilter("copies", e.target.checked ? "show" : "") }),
      ` show ${fmtInt(copies)} cop${copies === 1 ? "y" : "ies"} in other files`) : null,
    compare);
}

// The prompts to choose from: each name (any version), then each version of it.
function prompts(found) {
  const names = [...new Set(found.map((p) => p.split("@")[0]))];
  return names.flatMap((name) => [[name, `${name} (any version)`],
    ...found.filter((p) => p.startsWith(`${name}@`)).map((p) => [p, `${name} ${p.slice(name.length + 1)}`])]);
}

// A score's value as the list shows it: a number to three significant digits, a bool as ✓ / ✗, a label as it is.
function fmtScore(value) {
  if (typeof value === "boolean") return value ? "✓" : "✗";
  if (typeof value === "number") return String(Number(value.toPrecision(3)));
  return String(value);
}

// A run's question and answer, cut (the whole of each on hover).
function ioCell(run) {
  const question = run.question || run.preview || "";
  return el("td", { class: "col-io" },
    question ? el("div", { class: "io-in", title: question }, question.slice(0, 90)) : null,
    run.answer ? el("div", { class: "io-out muted", title: run.answer }, run.answer.slice(0, 90)) : null);
}

// The cells of the columns the runs may leave empty, by column.
const CELLS = {
  service: (run) => el("td", { class: "col-service" }, run.service || ""),
  user: (run) => el("td", { class: "col-user" }, run.user_id || ""),
  tags: (run) => el("td", { class: "col-tags" }, (run.tags || []).map((t) => el("span", { class: "tag" }, t)),
    run.prompt ? el("span", { class: "prompt", title: "prompt and its version" }, run.prompt.replace("@", " ")) : null),
  scores: (run) => el("td", { class: "col-scores" }, Object.entries(run.scores || {}).map(([name, value]) =>
    el("span", { class: "score", title: `${name}: ${value}` }, `${name} ${fmtScore(value)}`))),
  cost: (run) => el("td", { class: "num col-cost" }, fmtCost(run.cost)),
  providers: (run) => el("td", { class: "col-providers" }, (run.providers || []).join(", ")),
};

function runRow(run, i, shown) {
  const pick = el("input", { type: "checkbox", class: "pick", checked: list.picked.includes(run.id),
    "aria-label": "pick to compare",
    onclick: (e) => {
      e.stopPropagation();
      list.picked = list.picked.filter((id) => id !== run.id);
      if (e.target.checked) list.picked = [...list.picked, run.id].slice(-2);
      loadList();
    } });
  const tools = el("div", { class: "tools" },
    Object.entries(run.tools).map(([name, n]) => el("span", {}, n > 1 ? `${name} ×${n}` : name)));
  return el("tr", { class: `run${run.errors ? " has-errors" : ""}${i === list.current ? " current" : ""}`, "data-id": run.id,
    onclick: () => { location.hash = `#/run/${encodeURIComponent(run.id)}`; } },
  el("td", {}, pick),
  el("td", { class: "col-time", title: [utcTitle(run.start), `${run.file}:${run.line}`].filter(Boolean).join("\n") },
    fmtTime(run.start) || `${run.file}:${run.line}`),
  el("td", { class: "col-name" }, run.name || el("span", { class: "muted" }, "—")),
  ["service", "user", "tags", "scores"].filter((k) => shown.has(k)).map((k) => CELLS[k](run)),
  ioCell(run),
  el("td", { class: "col-models" }, run.models.join(", ")),
  shown.has("providers") ? CELLS.providers(run) : null,
  el("td", { class: "num col-steps" }, run.steps),
  el("td", { class: "col-calls" }, el("div", { class: "num" }, run.calls), tools),
  el("td", { class: "num errors col-errors" }, run.errors),
  el("td", { class: "num col-tokens_in", title: unreportedNote(run.tokens_unreported) }, fmtCount(run.tokens_in, run.tokens_unreported)),
  el("td", { class: "num col-tokens_out", title: unreportedNote(run.tokens_unreported) }, fmtCount(run.tokens_out, run.tokens_unreported)),
  shown.has("cost") ? CELLS.cost(run) : null,
  el("td", { class: "num col-duration" }, fmtMs(run.duration_ms)),
  statusCell(run, "td"));
}

// Move the keyboard's current row by `step` (j/k); past the page's end or start, the next or previous page.
export function moveCurrent(step) {
  const rows = document.querySelectorAll("#runs tr.run");
  if (!rows.length) return;
  const next = list.current + step;
  if (next >= rows.length && list.offset + rows.length < list.total) { list.offset += PAGE; list.current = 0; loadList(); return; }
  if (next < 0 && list.offset > 0) { list.offset = Math.max(0, list.offset - PAGE); list.current = PAGE - 1; loadList(); return; }
  list.current = Math.max(0, Math.min(rows.length - 1, next));
  rows.forEach((r, i) => r.classList.toggle("current", i === list.current));
  rows[list.current].scrollIntoView({ block: "nearest" });
}

// The keyboard's current row opened (Enter), or picked to compare (x).
export function currentRow() {
  const rows = document.querySelectorAll("#runs tr.run");
  return list.current >= 0 && list.current < rows.length ? rows[list.current] : null;
}

// No run yet: the paths the page watches and how traces are made; the list takes its place as soon as a run is
// written there (the poll sees the index's generation change).
function waitingNote(waiting) {
  const where = waiting.paths.map((p) => (waiting.missing.includes(p) ? `${p} (not there yet)` : p)).join(", ");
  return el("section", { id: "waiting", class: "waiting" },
    el("h2", {}, "No traces yet"),
    el("p", {}, `Watching ${where}: runs are listed here as soon as they are written, no reload needed.`),
    el("p", {}, waiting.hint.split("`").map((part, i) => (i % 2 ? el("code", {}, part) : part))));
}

function renderList(data) {
  const main = document.getElementById("main");
  if (data.waiting) {
    list.total = 0;
    list.current = -1;
    main.replaceChildren(waitingNote(data.waiting));
    return;
  }
  const columns = COLUMNS.filter(([, , , when]) => !when || when(data.facets));
  const shown = new Set(columns.map(([key]) => key));
  const head = el("tr", {}, el("th", {}, ""), columns.map(([key, label, sortable]) => el("th", {
    class: `col-${key}${sortable ? " sortable" : ""}${list.sort === key ? ` sorted ${list.order}` : ""}`,
    "data-sort": sortable ? key : null,
    onclick: sortable ? () => {
      if (list.sort === key) list.order = list.order === "desc" ? "asc" : "desc";
      else { list.sort = key; list.order = "desc"; }
      loadList();
    } : null }, label)));
  list.total = data.total;
  if (list.current >= data.runs.length) list.current = data.runs.length - 1;
  const body = el("tbody", { id: "runs" }, data.runs.map((run, i) => runRow(run, i, shown)));
  if (!data.runs.length) body.appendChild(emptyRow(data, columns.length + 1));
  const first = data.total ? data.offset + 1 : 0;
  const last = data.offset + data.runs.length;
  const pager = el("div", { class: "pager" },
    el("button", { disabled: data.offset === 0, onclick: () => { list.offset = Math.max(0, list.offset - PAGE); loadList(); } }, "‹ Newer"),
    el("span", { id: "count" }, `${fmtInt(first)}–${fmtInt(last)} of ${fmtInt(data.total)} runs` +
      (data.total !== data.all ? ` (${fmtInt(data.all)} in all)` : "")),
    el("button", { disabled: last >= data.total, onclick: () => { list.offset += PAGE; loadList(); } }, "Older ›"));
  const focused = document.activeElement;
  const caret = focused && focused.type === "search" ? [focused.id, focused.selectionStart, focused.selectionEnd] : null;
  const focusedId = focused && focused.id;
  const previous = document.getElementById("numbers");
  main.replaceChildren(filters(data.facets, data.copies || 0), previous || el("div", { id: "numbers" }),
    el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, head), body)), pager);
  const again = focusedId && focusedId.startsWith("f-") ? document.getElementById(focusedId) : null;
  if (again) {
    again.focus();
    if (caret) again.setSelectionRange(caret[1], caret[2]);
  }
}

// What an empty page says: no run the filters keep (with a way to clear them), or none at all.
function emptyRow(data, width) {
  const on = filtersOn();
  const text = data.all && on.length ? `No run matches these filters (${on.join(", ")}) among ${fmtInt(data.all)} runs.`
    : data.all ? "No run on this page." : "No runs here.";
  const clear = on.length ? el("button", { id: "clear-filters", type: "button", onclick: () => {
    for (const k of FILTERS) list[k] = "";
    setFilter("q", "");
  } }, "Clear the filters") : null;
  return el("tr", { class: "empty" }, el("td", { colspan: width, id: "empty-result" }, text, " ", clear));
}

let asked = 0;

// The list shown again: its page of runs first (the count as you type), then the numbers over them.
export async function loadList(view) {
  const mine = ++asked;
  if (view === undefined || view() === "list") keepInUrl();
  const query = listParams();
  try {
    const data = await api(`/api/runs?${query}`);
    if (mine !== asked) return;  // a newer query is on its way
    list.generation = data.generation;
    if (view !== undefined && view() !== "list") return;
    renderList(data);
    const stats = await api(`/api/stats?${query}`);
    const shown = document.getElementById("numbers");
    if (mine === asked && shown) shown.replaceWith(numbers(stats));
  } catch (e) { setStatus(`cannot load runs: ${e.message}`); }
}
