// Two runs compared: the first message where they differ, the deltas of their numbers, their tool trajectories side by
// side (where they part), and what each call's output and each run's answer became (a diff made of text nodes).
import { el, fmtCost, fmtInt, fmtMs, fmtTime, pretty, utcTitle } from "./dom.js";

function title(row) { return row.name || row.trace_id || `${row.file}:${row.line}`; }

// What tells two runs apart when their names are the same: when each started, and the start of its trace id.
function tell(row) {
  return [fmtTime(row.start), row.trace_id ? row.trace_id.slice(0, 8) : `${row.file}:${row.line}`].filter(Boolean).join(" · ");
}

function plural(n, word) { return `${fmtInt(n)} ${word}${n === 1 ? "" : "s"}`; }

function side(data, divergence, label) {
  const row = data.row;
  return el("div", {},
    el("h2", {}, el("a", { href: `#/run/${encodeURIComponent(row.id)}` }, `${label}: ${title(row)}`)),
    el("div", { class: "muted side-facts", title: utcTitle(row.start) }, `${tell(row)} · ${plural(row.calls, "tool call")} · ${row.status}`),
    el("ol", { class: "calls" }, data.calls.map((c, i) => el("li", {
      class: divergence === null || i < divergence ? "same" : i === divergence ? "diverge" : "" },
    el("span", { class: "tool-name" }, c.name), " ", el("code", {}, pretty(c.args ?? {}).replace(/\s+/g, " ").slice(0, 160)),
    c.error ? el("span", { class: "err-text" }, " error") : null))),
    divergence !== null && divergence >= data.calls.length ? el("p", { class: "diverge-end muted" }, `(no call ${divergence + 1})`) : null);
}

// One side of the first differing message: its role, text and calls (or that the run has no such message).
function messageSide(message, label) {
  if (!message) return el("div", { class: "message-side" }, el("b", {}, `${label}: `), el("span", { class: "muted" }, "(no such message: the run ended)"));
  return el("div", { class: "message-side" }, el("b", {}, `${label}: ${message.role}`),
    message.content ? el("div", { class: "text" }, message.content) : null,
    message.calls.length ? el("ul", {}, message.calls.map((c) => el("li", {}, el("span", { class: "tool-name" }, c.name), " ",
      el("code", {}, pretty(c.args ?? {}).replace(/\s+/g, " ").slice(0, 300))))) : null);
}

// A diff as text: what only A has struck through in red, what only B has in green.
function diffView(d, id) {
  return el("pre", { class: "diff", id },
    d.parts.map((p) => p.op === "equal" ? el("span", {}, p.text)
      : el(p.op === "delete" ? "del" : "ins", { class: p.op }, p.text)),
    d.cut ? el("span", { class: "muted" }, "\n(only the first 20,000 characters of each were compared)") : null);
}

const METRICS = [
  ["tokens_in", "tokens in", fmtInt], ["tokens_out", "tokens out", fmtInt], ["duration_ms", "duration", fmtMs],
  ["model_ms", "time in model calls", fmtMs], ["tool_ms", "time in tool runs", fmtMs], ["steps", "steps", fmtInt],
  ["calls", "tool calls", fmtInt], ["errors", "errors", fmtInt], ["cost", "cost", fmtCost],
];

function signed(key, fmt, delta) {
  if (delta === null || delta === undefined) return "";
  const amount = key === "cost" ? delta.amount : delta;
  if (!amount) return "±0";
  const text = key === "cost" ? fmt({ amount: Math.abs(amount), currency: delta.currency }) : fmt(Math.abs(amount));
  return `${amount > 0 ? "+" : "−"}${text}`;
}

function deltas(data) {
  const a = data.a.numbers;
  const b = data.b.numbers;
  const rows = METRICS.filter(([key]) => key !== "cost" || a.cost || b.cost).map(([key, label, fmt]) => {
    const d = data.deltas[key];
    const amount = d && typeof d === "object" ? d.amount : d;
    return el("tr", { "data-metric": key }, el("th", {}, label),
      el("td", { class: "num" }, a[key] === null || a[key] === undefined ? "—" : fmt(a[key])),
      el("td", { class: "num" }, b[key] === null || b[key] === undefined ? "—" : fmt(b[key])),
      el("td", { class: `num delta${amount > 0 ? " up" : amount < 0 ? " down" : ""}` }, signed(key, fmt, d)));
  });
  return el("table", { id: "deltas" }, el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", {}, "A"), el("th", {}, "B"),
    el("th", {}, "B − A"))), el("tbody", {}, rows));
}

export function renderCompare(data) {
  const d = data.divergence;
  const summary = d === null ? "The tool trajectories are the same." : `The trajectories part at call ${d + 1}.`;
  const m = data.message;
  const first = m === null ? el("p", { id: "first-difference" }, "Every message is the same.")
    : el("div", { id: "first-difference" }, el("h3", {}, `The first message that differs: message ${m.index + 1}`),
      el("div", { class: "compare" }, messageSide(m.a, "A"), messageSide(m.b, "B")));
  const outputs = data.outputs.map((o) => el("div", { class: "output-diff", "data-call": o.call },
    el("h3", {}, `Call ${o.call + 1} (${o.name}): the outputs differ`), diffView(o, null)));
  const link = (row, label) => el("a", { href: `#/run/${encodeURIComponent(row.id)}`, title: utcTitle(row.start) },
    `${label}: ${title(row)}`, el("span", { class: "muted tell" }, ` (${tell(row)})`));
  document.getElementById("main").replaceChildren(
    el("h1", { class: "compare-title" }, link(data.a.row, "A"), " compared with ", link(data.b.row, "B")),
    el("p", { id: "divergence" }, summary), first,
    el("h3", {}, "Numbers"), deltas(data),
    el("h3", {}, "Tool trajectories"), el("div", { class: "compare" }, side(data.a, d, "A"), side(data.b, d, "B")),
    data.answer ? el("div", { id: "answer-diff" }, el("h3", {}, "The answers differ"), diffView(data.answer, "answer"))
      : el("p", { class: "muted", id: "answer-diff" }, "The answers are the same."),
    el("div", { id: "output-diffs" }, outputs));
}
