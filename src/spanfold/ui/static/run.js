// One run: its facts, and tabs for the conversation, the waterfall, the metadata and the raw record. A step picked in
// the waterfall is the step picked in the conversation (`#/run/ID/TAB/sK`), and the other way round. The run arrives
// as it is shown: its first page of events (more as the reader scrolls), the raw record and the spec when asked for.
import { api, el, errorTitle, fmtCost, fmtInt, fmtMs, fmtTime, fmtTokens, pretty, setStatus } from "./dom.js";
import { conversation, loadEvents, runHref } from "./conversation.js";
import { waterfall } from "./waterfall.js";

export { runHref };

const TABS = [["conversation", "Conversation"], ["timeline", "Timeline"], ["metadata", "Metadata"], ["raw", "Raw events"]];

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

function header(run, tab, selected) {
  const row = run.row;
  const ended = row.status === "error" ? (run.meta && run.meta.error) || row.error : null;
  const specBox = el("div", { id: "spec-box" }, el("div", { class: "label" }, "Expected messages for `spanfold check`:"),
    el("pre", { id: "spec" }, ""));
  return el("div", { class: "run-head" },
    el("h1", {}, row.name || row.trace_id || `${row.file}:${row.line}`),
    el("div", { class: "facts" },
      el("span", { id: "run-status" }, el("b", {}, "status "), el("span", { class: `status-${row.status}` }, row.status),
        ended ? el("span", { class: "err-text" }, ` (${errorTitle(ended)})`) : null),
      el("span", {}, el("b", {}, "models "), row.models.join(", ") || "—"),
      el("span", {}, el("b", {}, "steps "), String(row.steps)),
      el("span", {}, el("b", {}, "tool calls "), String(row.calls)),
      el("span", { class: row.errors ? "err-text" : "" }, el("b", {}, "errors "), String(row.errors)),
      el("span", {}, el("b", {}, "tokens "), fmtTokens({ input_tokens: row.tokens_in, output_tokens: row.tokens_out })),
      row.cost ? el("span", {}, el("b", {}, "cost "), fmtCost(row.cost)) : null,
      el("span", {}, el("b", {}, "duration "), fmtMs(row.duration_ms) || "—"),
      el("span", {}, el("b", {}, "started "), fmtTime(row.start) || "—"),
      el("span", { class: "muted" }, `${row.file}:${row.line}`)),
    el("div", {}, copySpec(run, specBox), " ", el("a", { href: runHref(row.id, "conversation"), id: "permalink" }, "permalink")), specBox,
    el("div", { class: "tabs" }, TABS.map(([key, label]) => el("button", { class: key === tab ? "active" : "",
      "data-tab": key, onclick: () => { location.hash = runHref(row.id, key, selected); } }, label))));
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

// Show `run` on tab `tab`; `anchor`: "sK" picks step K (from 1), a number scrolls to that event.
export async function renderRun(run, tab, anchor) {
  const steps = run.waterfall ? run.waterfall.steps : [];
  let selected = null;
  let target = null;
  if (anchor && /^s\d+$/.test(anchor)) {
    const k = Number(anchor.slice(1)) - 1;
    if (k >= 0 && k < steps.length) {
      selected = k;
      if (steps[k].event !== null) target = steps[k].event + 1;
    }
  } else if (anchor && /^\d+$/.test(anchor)) {
    target = Number(anchor);
  }
  let body;
  if (!run.waterfall) body = [el("p", { class: "muted" }, "This record holds a summary only, no events.")];
  else if (tab === "timeline") body = waterfall(run, selected, (t, k) => runHref(run.row.id, t, k));
  else if (tab === "metadata") body = [el("pre", { id: "metadata" }, pretty(run.meta))];
  else if (tab === "raw") body = rawView(run);
  else {
    if (target !== null && target > run.next) await loadEvents(run, target - 1);
    body = conversation(run, selected);
  }
  document.getElementById("main").replaceChildren(header(run, tab, selected), el("div", { id: "run-body" }, body));
  if (tab === "timeline" && selected !== null) {
    const row = document.querySelector(`.wf-row[data-step="${selected}"]`);
    if (row) row.scrollIntoView({ block: "nearest" });
  } else if (tab === "conversation" && target !== null) {
    const node = document.getElementById(`event-${target}`);
    if (node) node.scrollIntoView({ block: "center" });
  }
}
