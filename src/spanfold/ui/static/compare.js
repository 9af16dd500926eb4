// Two runs side by side: their tool trajectories, and where they part.
import { el, pretty } from "./dom.js";

function side(data, divergence, label) {
  const row = data.row;
  return el("div", {},
    el("h2", {}, el("a", { href: `#/run/${encodeURIComponent(row.id)}` }, `${label}: ${row.name || row.trace_id || row.file + ":" + row.line}`)),
    el("div", { class: "muted" }, `${row.calls} tool calls · ${row.status}`),
    el("ol", { class: "calls" }, data.calls.map((c, i) => el("li", {
      class: divergence === null || i < divergence ? "same" : i === divergence ? "diverge" : "" },
    el("span", { class: "tool-name" }, c.name), " ", el("code", {}, pretty(c.args ?? {}).replace(/\s+/g, " ").slice(0, 160)),
    c.error ? el("span", { class: "err-text" }, " error") : null))),
    divergence !== null && divergence >= data.calls.length ? el("p", { class: "diverge-end muted" }, `(no call ${divergence + 1})`) : null);
}

export function renderCompare(data) {
  const d = data.divergence;
  const summary = d === null ? "The tool trajectories are the same." : `The trajectories part at call ${d + 1}.`;
  document.getElementById("main").replaceChildren(el("p", { id: "divergence" }, summary),
    el("div", { class: "compare" }, side(data.a, d, "A"), side(data.b, d, "B")));
}
