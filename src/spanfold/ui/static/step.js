// The details of one step of a run (a model call, a tool run, or a step beside the conversation: an embeddings call, a
// retrieval, a rerank, a memory operation, with its query and documents), below its waterfall: its figures (a model call's
// request parameters too: temperature, max_tokens ..., as its span states them); what it was sent
// (a model call's messages new to it, a tool run's arguments) and what it gave back (the call's answer and tool calls,
// the tool's output), each long text cut with the rest on request; its error (type, message, stack); and every field
// the trace records of it as a table (the span's attributes that the flat trace keeps: provider, response id, finish
// reasons, usage, cost, ids).
import { el, fmtCost, fmtMs, fmtTimeMs, fmtTokens } from "./dom.js";
import { jsonBlock, loadEvents, textBlock } from "./conversation.js";
import { stepLabel } from "./waterfall.js";

// An error as its type, its message and its stack (when the trace records one), the message said once.
export function errorDetails(error) {
  if (!error) return null;
  if (typeof error !== "object") return el("div", { class: "err-text error-details" }, String(error));
  const stack = error.stacktrace ?? error.stack ?? error["exception.stacktrace"];
  return el("div", { class: "err-text error-details" },
    el("div", {}, el("b", { class: "error-type" }, String(error.type ?? "error")),
      error.message ? [": ", el("span", { class: "error-message" }, String(error.message))] : null),
    stack ? el("details", { class: "error-stack" }, el("summary", {}, "stack"), el("pre", {}, String(stack))) : null);
}

// The step's fields and its event's metadata as rows of a table (values as text; records as JSON).
function attributes(step, ev) {
  const rows = [];
  const add = (key, value) => {
    if (value === null || value === undefined || value === "") return;
    rows.push(el("tr", { "data-key": key }, el("th", { scope: "row" }, key),
      el("td", {}, typeof value === "object" ? el("code", {}, JSON.stringify(value)) : String(value))));
  };
  for (const [key, value] of Object.entries(step)) {
    if (!["depth", "parent", "event", "label", "error", "query", "documents"].includes(key)) add(key, value);
  }
  for (const [key, value] of Object.entries((ev && ev.metadata) || {})) add(`event.${key}`, value);
  return rows.length ? el("details", { class: "step-attributes", open: true }, el("summary", {}, "attributes"),
    el("table", { id: "step-attributes" }, el("tbody", {}, rows))) : null;
}

// One event shown in a step's details: its role, its text and its tool calls.
function eventBox(run, ev) {
  const text = typeof ev.content === "string" ? ev.content
    : Array.isArray(ev.content) ? ev.content.filter((c) => c && c.type === "text").map((c) => c.text).join("") : "";
  return el("div", { class: `step-event ${ev.role}`, "data-n": ev.n },
    el("div", { class: "role" }, ev.role === "tool" ? `tool output${ev.name ? ` · ${ev.name}` : ""}` : ev.role),
    text ? textBlock(run, ev, typeof ev.content === "string" ? "content" : "content/0/text", text, ev.role, "pre") : null,
    (ev.tool_calls || []).map((call, i) => el("div", { class: "step-call" }, el("span", { class: "tool-name" }, call.function?.name || "?"), " ",
      jsonBlock(run, ev, `tool_calls/${i}/function/arguments`, call.function?.arguments ?? {}, "arguments"))));
}

// The kinds of steps beside the conversation: their event is the one they precede, not their output.
export const ASIDE = ["embeddings", "retrieval", "rerank", "memory"];

// What a retrieval, rerank or memory operation was asked (its query) and found (its documents in the order the store
// returned them: rank, id, score and, with content capture on, the text, a long one folded).
function lookup(run, step) {
  const parts = [];
  if (step.query != null) parts.push(el("h4", {}, "query"), el("div", { class: "step-query" }, textBlock(run, {}, "", step.query, "query", "pre")));
  const docs = Array.isArray(step.documents) ? step.documents : null;
  if (docs) {
    parts.push(el("h4", {}, `documents: ${docs.length}`), docs.length ? el("table", { class: "step-documents" },
      el("thead", {}, el("tr", {}, ["#", "id", "score", "text"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, docs.map((d, i) => el("tr", { class: "document" },
        el("td", {}, String(i + 1)), el("td", { class: "doc-id" }, d.id == null ? "—" : String(d.id)),
        el("td", { class: "doc-score num" }, typeof d.score === "number" ? String(Math.round(d.score * 10000) / 10000) : "—"),
        el("td", { class: "doc-text" }, typeof d.text === "string" ? textBlock(run, {}, "", d.text, "text", "pre") : el("span", { class: "muted" }, "not captured")))))) : null);
  }
  return parts;
}

// What the step was sent and gave back, from the run's events (fetched up to the step's when not loaded yet).
async function exchange(run, k, box) {
  const steps = run.waterfall.steps;
  const step = steps[k];
  if (ASIDE.includes(step.kind)) { box.replaceChildren(...lookup(run, step)); return; }
  if (step.event === null) { box.replaceChildren(); return; }
  if (step.event >= run.events.length) await loadEvents(run, step.event);
  const byIndex = (n) => run.events[n];
  const output = byIndex(step.event);
  const parts = [];
  if (step.kind === "tool") {
    const asker = step.parent !== null ? byIndex(steps[step.parent].event) : null;
    const call = asker && (asker.tool_calls || []).find((c) => c.id === step.call_id);
    if (call) {
      const i = asker.tool_calls.indexOf(call);
      parts.push(el("h4", {}, "input: arguments"), jsonBlock(run, asker, `tool_calls/${i}/function/arguments`, call.function?.arguments ?? {}, "arguments"));
    }
    if (output) parts.push(el("h4", {}, "output"), el("div", { class: "step-output" }, eventBox(run, output)));
  } else {
    const before = steps.filter((s) => s.kind === "model" && s.event !== null && s.event < step.event).map((s) => s.event);
    const from = before.length ? Math.max(...before) + 1 : 0;
    const sent = run.events.slice(from, step.event);
    parts.push(el("h4", {}, from ? `input: the ${sent.length} message${sent.length === 1 ? "" : "s"} new to this call (it also sent the ${from} before)`
      : `input: ${sent.length} message${sent.length === 1 ? "" : "s"}`), el("div", { class: "step-input" }, sent.map((ev) => eventBox(run, ev))));
    if (output) parts.push(el("h4", {}, "output"), el("div", { class: "step-output" }, eventBox(run, output)));
  }
  box.replaceChildren(...parts);
  const attrs = attributes(step, output);
  const old = box.parentNode && box.parentNode.querySelector(".step-attributes");
  if (attrs && old) old.replaceWith(attrs);
}

// The details of step `k` of `run` (or the hint to pick one); `href(tab, k)` makes a step's link.
export function stepDetails(run, k, href) {
  const step = run.waterfall.steps[k];
  if (!step) return el("div", { id: "step-details", class: "muted" }, "Select a step to see its details.");
  const origin = Date.parse(run.waterfall.origin);
  const ev = step.event !== null && !ASIDE.includes(step.kind) ? run.events[step.event] : null;
  const finish = ev && ev.metadata && ev.metadata.finish_reasons;
  const rows = [
    ["step", `${k + 1} of ${run.waterfall.steps.length}`],
    [step.kind === "model" ? "model" : step.kind, step.label || "—"],
    ["started", step.offset_ms !== null && !isNaN(origin)
      ? `${fmtTimeMs(new Date(origin + step.offset_ms).toISOString())} (+${fmtMs(step.offset_ms)})` : "—"],
    ["duration", fmtMs(step.duration_ms) || "not recorded"],
  ];
  if (step.kind === "model" || step.kind === "embeddings") rows.push(["tokens", fmtTokens(step.usage) || "not recorded"]);
  for (const key of ["operation", "store", "top_k", "inputs"]) {  // a step beside the conversation: what it records
    if (step[key] != null) rows.push([key === "top_k" ? "top k" : key, String(step[key]), { "data-field": key }]);
  }
  for (const [name, value] of Object.entries(step.params || {})) {  // the request's parameters, as its span states them
    rows.push([name, typeof value === "object" ? JSON.stringify(value) : String(value), { class: "param", "data-param": name }]);
  }
  if (step.cost) rows.push(["cost", fmtCost(step.cost)]);
  if (finish) rows.push(["finish reason", Array.isArray(finish) ? finish.join(", ") : String(finish)]);
  if (step.call_id) rows.push(["call id", step.call_id]);
  if (step.span_id) rows.push(["span id", step.span_id]);
  const above = step.parent !== null ? run.waterfall.steps[step.parent] : null;
  if (above) rows.push([above.kind === "agent" ? "ran under" : "asked for by", `step ${step.parent + 1}: ${stepLabel(above)}`]);
  if (step.kind === "agent") {  // an agent below the run's own: what ran under it
    const under = run.waterfall.steps.filter((s) => s.parent === k);
    rows.push(["ran", under.length ? under.map(stepLabel).join(", ") : "nothing recorded"]);
  }
  const io = el("div", { class: "step-io" }, step.event !== null && !ASIDE.includes(step.kind) ? el("span", { class: "muted" }, "loading what it sent and got…") : null);
  const box = el("div", { id: "step-details", class: step.error ? "error" : "", "data-step": k },
    el("dl", {}, rows.map(([key, value, attrs]) => [el("dt", attrs || {}, key), el("dd", attrs || {}, value)])),
    errorDetails(step.error),
    step.event !== null ? el("a", { href: href("conversation", k), id: "step-in-conversation" },
      ASIDE.includes(step.kind) ? "Show the message it preceded" : "Show in the conversation") : null,
    io, attributes(step, ev));
  exchange(run, k, io).catch((e) => io.replaceChildren(el("span", { class: "err-text" }, `cannot load the step's messages: ${e.message}`)));
  return box;
}
