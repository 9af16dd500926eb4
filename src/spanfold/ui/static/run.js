// One run: its facts, and tabs for the conversation, the waterfall, the metadata and the raw record. A step picked in
// the waterfall is the step picked in the conversation (`#/run/ID/TAB/sK`), and the other way round.
import { el, errorBlock, errorTitle, fmtCost, fmtMs, fmtTime, fmtTokens, pretty, setStatus } from "./dom.js";
import { stepLabel, stepNumbers, waterfall } from "./waterfall.js";

const FOLD_CHARS = 600;
const TABS = [["conversation", "Conversation"], ["timeline", "Timeline"], ["metadata", "Metadata"], ["raw", "Raw events"]];

export function runHref(id, tab, step) {
  return `#/run/${encodeURIComponent(id)}/${tab}${step !== null && step !== undefined ? `/s${step + 1}` : ""}`;
}

function folded(label, text) {
  const pre = el("pre", {}, text);
  if (text.length <= FOLD_CHARS && text.split("\n").length <= 12) return el("div", {}, pre);
  return el("details", {}, el("summary", {}, `${label} (${text.length.toLocaleString()} chars)`), pre);
}

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

// A step's chip on its event: what it was and its numbers; a click picks it (here and in the waterfall).
function stepChip(run, k, selected) {
  const step = run.waterfall.steps[k];
  const numbers = stepNumbers(step);
  return el("span", { class: `step-chip${step.error ? " error" : ""}`, "data-step": k },
    el("a", { href: runHref(run.row.id, "conversation", k), title: "pick this step (the timeline shows it too)" },
      `step ${k + 1} · ${stepLabel(step)}${numbers ? ` · ${numbers}` : ""}`),
    k === selected ? el("a", { class: "to-timeline", href: runHref(run.row.id, "timeline", k) }, "in the timeline") : null);
}

function toolCard(run, call, output, stepOf, selected) {
  const fn = call.function || {};
  const failed = output && output.error;
  const k = output ? stepOf.get(output.n - 1) : undefined;
  const card = el("div", { class: `card${failed ? " error" : ""}${k !== undefined && k === selected ? " selected" : ""}`,
    id: output ? `event-${output.n}` : null },
  el("div", {}, el("span", { class: "tool-name" }, fn.name || "?"), " ", el("span", { class: "muted" }, call.id || ""),
    k !== undefined ? [" ", stepChip(run, k, selected)] : null),
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

function conversation(run, selected) {
  const events = run.events;
  const stepOf = new Map(run.waterfall.steps.map((s, k) => [s.event, k]).filter(([n]) => n !== null));
  const outputs = new Map();
  for (const ev of events) if (ev.role === "tool" && ev.tool_call_id) outputs.set(ev.tool_call_id, ev);
  const used = new Set();
  const out = [];
  for (const ev of events) {
    if (ev.role === "tool" && used.has(ev)) continue;
    const k = stepOf.get(ev.n - 1);
    const box = el("div", { class: `msg ${ev.role}${ev.error ? " error" : ""}${k !== undefined && k === selected ? " selected" : ""}`,
      id: `event-${ev.n}` },
    el("div", { class: "role" }, ev.role === "tool" ? `tool output${ev.name ? " · " + ev.name : ""}` : ev.role,
      ev.timestamp ? el("span", { class: "muted" }, ` · ${fmtTime(ev.timestamp)}`) : null,
      k !== undefined ? [" ", stepChip(run, k, selected)] : null));
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
      box.appendChild(toolCard(run, call, output, stepOf, selected));
    }
    out.push(box);
  }
  return out;
}

function header(run, tab, selected) {
  const row = run.row;
  const ended = row.status === "error" ? (run.meta && run.meta.error) || row.error : null;
  const specBox = el("div", { id: "spec-box" }, el("div", { class: "label" }, "Expected messages for `spanfold check` (copied):"),
    el("pre", { id: "spec" }, run.spec || ""));
  const copy = el("button", { id: "copy-spec", disabled: !run.spec, onclick: async () => {
    specBox.classList.add("shown");
    try { await navigator.clipboard.writeText(run.spec); setStatus("spec copied"); } catch (e) { setStatus("select the spec below to copy it"); }
  } }, "Copy as spec");
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
    el("div", {}, copy, " ", el("a", { href: runHref(row.id, "conversation"), id: "permalink" }, "permalink")), specBox,
    el("div", { class: "tabs" }, TABS.map(([key, label]) => el("button", { class: key === tab ? "active" : "",
      "data-tab": key, onclick: () => { location.hash = runHref(row.id, key, selected); } }, label))));
}

// Show `run` on tab `tab`; `anchor`: "sK" picks step K (from 1), a number scrolls to that event.
export function renderRun(run, tab, anchor) {
  const steps = run.waterfall ? run.waterfall.steps : [];
  let selected = null;
  let target = null;
  if (anchor && /^s\d+$/.test(anchor)) {
    const k = Number(anchor.slice(1)) - 1;
    if (k >= 0 && k < steps.length) {
      selected = k;
      if (steps[k].event !== null) target = `event-${steps[k].event + 1}`;
    }
  } else if (anchor) {
    target = `event-${anchor}`;
  }
  let body;
  if (!run.events) body = [el("p", { class: "muted" }, "This record holds a summary only, no events.")];
  else if (tab === "timeline") body = waterfall(run, selected, (t, k) => runHref(run.row.id, t, k));
  else if (tab === "metadata") body = [el("pre", { id: "metadata" }, pretty(run.meta))];
  else if (tab === "raw") body = [el("pre", { id: "raw" }, pretty(run.raw))];
  else body = conversation(run, selected);
  document.getElementById("main").replaceChildren(header(run, tab, selected), el("div", { id: "run-body" }, body));
  if (tab === "timeline" && selected !== null) {
    const row = document.querySelector(`.wf-row[data-step="${selected}"]`);
    if (row) row.scrollIntoView({ block: "nearest" });
  } else if (tab === "conversation" && target) {
    const node = document.getElementById(target);
    if (node) node.scrollIntoView({ block: "center" });
  }
}
