// One run: its facts, and tabs for the conversation, the waterfall, the metadata and the raw record. A step picked in
// the waterfall is the step picked in the conversation (`#/run/ID/TAB/sK`), and the other way round. The run arrives
// as it is shown: its first page of events (more as the reader scrolls), the raw record and the spec when asked for.
import { api, el, errorTitle, fmtCost, fmtInt, fmtMs, fmtRunTokens, fmtTime, setStatus, utcTitle } from "./dom.js";
import { metadataTable } from "./metadata.js";
import { conversation, loadEvents, runHref } from "./conversation.js";
import { statusCell } from "./list.js";
import { sessionHref } from "./sessions.js";
import { stepDetails, waterfall } from "./waterfall.js";

export { runHref };

const TABS = [["conversation", "Conversation"], ["timeline", "Timeline"], ["metadata", "Metadata"], ["raw", "Raw events"]];
const MARKDOWN_KEY = "spanfold.markdown";

// What the page shows of the run now: which run, tab and step (the keyboard and the links move from there).
export const shown = { run: null, tab: "", step: null };

// Whether an assistant's text is shown as Markdown (the reader's choice, kept in this browser; on by default).
export function markdownOn() {
  try { return localStorage.getItem(MARKDOWN_KEY) !== "off"; } catch (e) { return true; }
}

// A run as the page keeps it while it is shown: the server's first answer, and its events loaded so far.
export async function openRun(id) {
  const run = await api(`/api/run/${encodeURIComponent(id)}`);
  run.events = run.events || [];
  run.next = run.next || run.events.length;
  return run;
}

function copySpec(run, box) {
  return el("button", { id: "copy-spec", disabled: !run.waterfall, onclick: async () => {
    box.classList.add("shown");
    const pre = box.querySelector("#spec");
    pre.textContent = "building the spec…";
    try {
      run.spec = run.spec ?? (await api(`/api/run/${encodeURIComponent(run.row.id)}/spec`)).spec;
      pre.textContent = run.spec;
    } catch (e) { pre.textContent = `cannot build the spec: ${e.message}`; return; }
    try { await navigator.clipboard.writeText(run.spec); setStatus("spec copied"); } catch (e) { setStatus("select the spec below to copy it"); }
  } }, "Copy as spec");
}

// Where the run's time went: its model calls', tool runs' and (when it had any) retrievals', reranks', memory operations'
// and embeddings calls' durations added up, by kind (steps may overlap: an embeddings call inside a retrieval).
function latency(run) {
  const steps = run.waterfall ? run.waterfall.steps : [];
  if (!steps.some((s) => s.duration_ms !== null)) return null;
  const sum = (kind) => steps.filter((s) => s.kind === kind).reduce((t, s) => t + (s.duration_ms || 0), 0);
  const models = steps.filter((s) => s.kind === "model").length;
  const tools = steps.filter((s) => s.kind === "tool").length;
  const aside = ["retrieval", "rerank", "memory", "embeddings"].map((kind) => [kind, steps.filter((s) => s.kind === kind).length])
    .filter(([, n]) => n).map(([kind, n]) => ` · ${n} ${kind === "embeddings" ? "embeddings call" : kind}${n === 1 ? "" : "s"} ${fmtMs(sum(kind))}`);
  return el("span", { id: "run-latency" }, el("b", {}, "in steps "),
    `${models} model call${models === 1 ? "" : "s"} ${fmtMs(sum("model"))} · ${tools} tool run${tools === 1 ? "" : "s"} ${fmtMs(sum("tool"))}${aside.join("")}`);
}

function header(run, tab) {
  const row = run.row;
  const ended = row.status === "error" ? (run.meta && run.meta.error) || row.error : null;
  const specBox = el("div", { id: "spec-box" }, el("div", { class: "label" }, "Expected messages for `spanfold check`:"),
    el("pre", { id: "spec" }, ""));
  const markdownToggle = el("label", { class: "muted", title: "show an assistant's text as Markdown" },
    el("input", { type: "checkbox", id: "markdown", checked: markdownOn(), onchange: (e) => {
      try { localStorage.setItem(MARKDOWN_KEY, e.target.checked ? "on" : "off"); } catch (err) { /* kept for this view only */ }
      renderRun(run, shown.tab, shown.step !== null ? `s${shown.step + 1}` : undefined);
    } }), " Markdown");
  const copies = run.copies && run.copies.length ? el("div", { class: "copies muted" }, "Also in: ",
    run.copies.map((c, i) => [i ? ", " : "", el("a", { href: runHref(c.id, "conversation") }, `${c.file}:${c.line}`), ` (${c.shape})`])) : null;
  return el("div", { class: "run-head" },
    el("h1", {}, row.name || row.trace_id || `${row.file}:${row.line}`),
    el("div", { class: "facts" },
      el("span", { id: "run-status" }, el("b", {}, "status "), statusCell(row, "span"),
        ended ? el("span", { class: "err-text" }, ` (${errorTitle(ended)})`) : null),
      row.trace_id ? el("span", { id: "run-trace-id" }, el("b", {}, "trace id "), el("code", {}, row.trace_id)) : null,
      row.service ? el("span", { id: "run-service" }, el("b", {}, "service "), row.service) : null,
      el("span", {}, el("b", {}, "models "), row.models.join(", ") || "—"),
      row.providers ? el("span", { id: "run-providers" }, el("b", {}, "provider "), row.providers.join(", ")) : null,
      el("span", { id: "run-steps", title: "model calls and tool runs" }, el("b", {}, "steps "), String(row.steps)),
      el("span", {}, el("b", {}, "tool calls "), String(row.calls)),
      el("span", { class: row.errors ? "err-text" : "" }, el("b", {}, "errors "), String(row.errors)),
      el("span", { id: "run-tokens" }, el("b", {}, "tokens "), fmtRunTokens(row.tokens_in, row.tokens_out, row.tokens_unreported)),
      row.cost ? el("span", {}, el("b", {}, "cost "), fmtCost(row.cost)) : null,
      el("span", {}, el("b", {}, "duration "), fmtMs(row.duration_ms) || "—"),
      latency(run),
      el("span", { title: utcTitle(row.start) }, el("b", {}, "started "), fmtTime(row.start) || "—"),
      row.user_id ? el("span", { id: "run-user" }, el("b", {}, "user "), row.user_id) : null,
      row.tags ? el("span", { id: "run-tags" }, el("b", {}, "tags "), row.tags.map((t) => el("span", { class: "tag" }, t))) : null,
      row.scores ? el("span", { id: "run-scores" }, el("b", {}, "scores "),
        Object.entries(row.scores).map(([name, value]) => el("span", { class: "score" }, `${name} ${value}`))) : null,
      row.prompt ? el("span", { id: "run-prompt" }, el("b", {}, "prompt "), row.prompt.replace("@", " ")) : null,
      el("span", { class: "muted where" }, `${row.file}:${row.line}`)),
    copies,
    run.session ? el("div", { class: "session-link" }, el("b", {}, "session "),
      el("a", { href: sessionHref(run.session.id), id: "session-link" }, run.session.id),
      ` (${fmtInt(run.session.runs)} run${run.session.runs === 1 ? "" : "s"})`) : null,
    el("div", { class: "run-tools" }, copySpec(run, specBox),
      el("a", { href: runHref(row.id, "conversation"), id: "permalink", title: row.trace_id ? "by trace id" : "by its place in its file" }, "permalink"),
      markdownToggle),
    specBox,
    el("div", { class: "tabs" }, TABS.map(([key, label]) => el("button", { class: key === tab ? "active" : "",
      "data-tab": key, onclick: () => { location.hash = runHref(row.id, key, shown.step); } }, label))));
}

// The raw record as indented JSON, a slice at a time.
function rawView(run) {
  const pre = el("pre", { id: "raw" }, "");
  const footer = el("div", {});
  const load = async () => {
    const from = pre.textContent.length;
    footer.replaceChildren(el("span", { class: "muted" }, "loading…"));
    try {
      const slice = await api(`/api/run/${encodeURIComponent(run.row.id)}/raw?from=${from}`);
      pre.appendChild(document.createTextNode(slice.text));
      const shown = slice.from + slice.text.length;
      footer.replaceChildren(shown < slice.total ? el("button", { class: "more", type: "button", onclick: load },
        `Show more (${fmtInt(shown)} of ${fmtInt(slice.total)} characters shown)`) : "");
    } catch (e) { footer.replaceChildren(el("span", { class: "err-text" }, `cannot load the raw record: ${e.message}`)); }
  };
  load();
  return [pre, footer];
}

function stepOf(run, anchor) {
  const steps = run.waterfall ? run.waterfall.steps : [];
  if (anchor && /^s\d+$/.test(anchor)) {
    const k = Number(anchor.slice(1)) - 1;
    if (k >= 0 && k < steps.length) return k;
  }
  return null;
}

function scrollToShown(tab, target) {
  if (tab === "timeline" && shown.step !== null) {
    const row = document.querySelector(`.wf-row[data-step="${shown.step}"]`);
    if (row) row.scrollIntoView({ block: "nearest" });
  } else if (tab === "conversation" && target !== null) {
    const node = document.getElementById(`event-${target}`);
    if (node) node.scrollIntoView({ block: "center" });
  }
}

// Pick step `anchor` ("sK") on the tab already shown, without drawing the run again; false when it cannot be done
// in place (another run or tab, or the step's event not on the page yet).
export function pickInPlace(run, tab, anchor) {
  if (shown.run !== run || shown.tab !== tab || !["timeline", "conversation"].includes(tab)) return false;
  const k = stepOf(run, anchor);
  if (k === null || !document.getElementById("run-body")) return false;
  const step = run.waterfall.steps[k];
  const target = step.event !== null ? step.event + 1 : null;
  if (tab === "conversation" && (target === null || !document.getElementById(`event-${target}`))) return false;
  shown.step = k;
  document.querySelectorAll("#run-body .selected").forEach((n) => n.classList.remove("selected"));
  if (tab === "timeline") {
    const row = document.querySelector(`.wf-row[data-step="${k}"]`);
    if (row) row.classList.add("selected");
    const details = document.getElementById("step-details");
    if (details) details.replaceWith(stepDetails(run, k, (t, j) => runHref(run.row.id, t, j)));
  } else {
    document.getElementById(`event-${target}`).classList.add("selected");
    document.querySelectorAll("#run-body a.to-timeline").forEach((a) => a.remove());
    const chip = document.querySelector(`#event-${target} .step-chip[data-step="${k}"]`);
    if (chip) chip.appendChild(el("a", { class: "to-timeline", href: runHref(run.row.id, "timeline", k) }, "in the timeline"));
  }
  scrollToShown(tab, target);
  return true;
}

// Show `run` on tab `tab`; `anchor`: "sK" picks step K (from 1), a number scrolls to that event.
export async function renderRun(run, tab, anchor) {
  const steps = run.waterfall ? run.waterfall.steps : [];
  const selected = stepOf(run, anchor);
  let target = null;
  if (selected !== null && steps[selected].event !== null) target = steps[selected].event + 1;
  else if (anchor && /^\d+$/.test(anchor)) target = Number(anchor);
  let body;
  if (!run.waterfall) body = [el("p", { class: "muted" }, "This record holds a summary only, no events.")];
  else if (tab === "timeline") body = waterfall(run, selected, (t, k) => runHref(run.row.id, t, k));
  else if (tab === "metadata") body = [metadataTable(run.meta)];
  else if (tab === "raw") body = rawView(run);
  else {
    if (target !== null && target > run.next) await loadEvents(run, target - 1);
    body = conversation(run, selected, markdownOn());
  }
  Object.assign(shown, { run, tab, step: selected });
  document.getElementById("main").replaceChildren(header(run, tab), el("div", { id: "run-body" }, body));
  scrollToShown(tab, target);
}
