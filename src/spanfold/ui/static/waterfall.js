// A run's waterfall: each model call and tool run (the server's `waterfall`: steps in the order drawn, tool runs
// under the call that asked for them) as a bar on one time axis, with the selected step's details below.
import { el, errorTitle, fmtCost, fmtMs, fmtTokens } from "./dom.js";
import { stepDetails } from "./step.js";

export { stepDetails };

// "model gpt-4o" / "tool get_weather": what a step is called everywhere on the page.
export function stepLabel(step) {
  return `${step.kind} ${step.label || ""}`.trim();
}

// The numbers of a step, one line: duration, tokens, cost.
export function stepNumbers(step) {
  return [fmtMs(step.duration_ms), fmtTokens(step.usage), fmtCost(step.cost)].filter(Boolean).join(" · ");
}

// A round step for the axis' ticks (1, 2 or 5 times a power of ten), about `count` ticks over `span`.
function tickStep(span, count) {
  const raw = span / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (raw <= m * power) return m * power;
  return 10 * power;
}

function axis(span) {
  const step = tickStep(span, 5);
  const ticks = [];
  for (let t = 0; t <= span + 1e-9; t += step) {
    ticks.push(el("span", { class: "tick", style: `left:${(100 * t) / span}%` }, t === 0 ? "0" : fmtMs(t)));
  }
  return el("div", { class: "wf-row wf-axis" }, el("span", {}, ""), el("div", { class: "wf-track" }, ticks),
    el("span", {}, ""), el("span", {}, ""), el("span", {}, ""));
}

function tooltip(step, k) {
  return [`step ${k + 1}: ${stepLabel(step)}`, step.offset_ms !== null ? `starts at +${fmtMs(step.offset_ms)}` : "",
    stepNumbers(step), step.error ? `error: ${errorTitle(step.error)}` : ""].filter(Boolean).join("\n");
}

// The run itself as the first row, its steps under it: its whole time on the axis, and what came before its first
// step (the time its own code took before the first call) said rather than left a gap.
function runRow(run, span) {
  const wf = run.waterfall;
  const row = run.row;
  const firsts = wf.steps.map((s) => s.offset_ms).filter((o) => o !== null && o !== undefined);
  const first = firsts.length ? Math.min(...firsts) : null;
  const took = row.duration_ms ?? wf.span_ms;
  const bar = el("div", { class: "bar run" });
  bar.style.left = "0%";
  bar.style.width = `max(3px, ${(100 * (took || span)) / span}%)`;
  const gap = first !== null && first > 0 ? `${fmtMs(first)} before its first step` : "";
  return el("div", { class: "wf-row run-row step-run", id: "wf-run",
    title: [`the run${row.name ? `: ${row.name}` : ""}`, took ? `took ${fmtMs(took)}` : "", gap].filter(Boolean).join("\n") },
  el("span", { class: "wf-label" }, `run ${row.name || ""}`.trim()), el("div", { class: "wf-track" },
    first ? el("div", { class: "bar before", style: `left:0%;width:${(100 * first) / span}%` }) : null, bar),
  el("span", { class: "muted num" }, fmtMs(took)), el("span", { class: "muted", id: "wf-run-gap" }, gap), el("span", {}, ""));
}

// The waterfall of `run` with step `selected` (or null) picked; `href(tab, k)` makes a step's link.
export function waterfall(run, selected, href) {
  const wf = run.waterfall;
  if (!wf || !wf.steps.length) return [el("p", { class: "muted" }, "This trace records no step times.")];
  const span = wf.span_ms && wf.span_ms > 0 ? wf.span_ms : Math.max(1, ...wf.steps.map((s) => (s.offset_ms || 0) + (s.duration_ms || 0)));
  const rows = wf.steps.map((s, k) => {
    const bar = el("div", { class: `bar ${s.kind}${s.error ? " error" : ""}${s.duration_ms === null ? " instant" : ""}` });
    if (s.offset_ms !== null) {
      bar.style.left = `${(100 * s.offset_ms) / span}%`;
      bar.style.width = `max(3px, ${(100 * (s.duration_ms || 0)) / span}%)`;
    } else {
      bar.classList.add("untimed");
    }
    const label = el("a", { class: "wf-label", href: href("timeline", k), style: `padding-left:${(s.depth + 1) * 1.25}em` },
      s.depth ? el("span", { class: "nest" }, "└ ") : null, stepLabel(s));
    return el("div", { class: `wf-row bar-row step-${s.kind}${k === selected ? " selected" : ""}${s.error ? " has-error" : ""}`,
      "data-step": k, title: tooltip(s, k), onclick: (e) => { if (e.target.tagName !== "A") location.hash = href("timeline", k); } },
    label, el("div", { class: "wf-track" }, bar),
    el("span", { class: "muted num" }, fmtMs(s.duration_ms)),
    el("span", { class: s.error ? "err-text" : "muted" }, s.error ? errorTitle(s.error) || "error"
      : [fmtTokens(s.usage), fmtCost(s.cost)].filter(Boolean).join(" · ")),
    s.event !== null ? el("a", { class: "to-event", href: href("conversation", k), title: "show in the conversation" }, "↗")
      : el("span", {}, ""));
  });
  return [el("div", { class: "timeline" }, axis(span), runRow(run, span), rows), stepDetails(run, selected, href)];
}
