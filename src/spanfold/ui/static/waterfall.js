// A run's waterfall: each model call and tool run (the server's `waterfall`: steps in the order drawn, tool runs
// under the call that asked for them; the agents below the run's own, handoffs and sub-agents, as rows with what ran
// under them nested) as a bar on one time axis, with the selected step's details below.
import { el, errorTitle, fmtCost, fmtMs, fmtTokens } from "./dom.js";
import { stepDetails } from "./step.js";

export { stepDetails };

// "model gpt-4o" / "tool get_weather": what a step is called everywhere on the page.
export function stepLabel(step) {
  return `${step.kind} ${step.label || ""}`.trim();
}

// The numbers of a step, one line: duration, tokens, the documents a retrieval found, cost.
export function stepNumbers(step) {
  const docs = Array.isArray(step.documents) ? `${step.documents.length} document${step.documents.length === 1 ? "" : "s"}` : "";
  return [fmtMs(step.duration_ms), fmtTokens(step.usage), docs, fmtCost(step.cost)].filter(Boolean).join(" · ");
}

// A round step for the axis' ticks (1, 2 or 5 times a power of ten), about `count` ticks over `span`.
function tickStep(span, count) {
  const raw = span / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (raw <= m * power) return m * power;
  return 10 * power;
}

// The axis' ticks over the window shown, `from` to `from + span` (ms from the run's start).
function axis(span, from = 0) {
  const step = tickStep(span, 5);
  const ticks = [];
  for (let t = Math.ceil(from / step - 1e-9) * step; t <= from + span + 1e-9; t += step) {
    ticks.push(el("span", { class: "tick", style: `left:${(100 * (t - from)) / span}%` }, t === 0 ? "0" : fmtMs(t)));
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
function runRow(run, span, from = 0) {
  const wf = run.waterfall;
  const row = run.row;
  const firsts = wf.steps.map((s) => s.offset_ms).filter((o) => o !== null && o !== undefined);
  const first = firsts.length ? Math.min(...firsts) : null;
  const took = row.duration_ms ?? wf.span_ms;
  const bar = el("div", { class: "bar run" });
  bar.style.left = `${(-100 * from) / span}%`;
  bar.style.width = `max(3px, ${(100 * (took || span)) / span}%)`;
  const gap = first !== null && first > 0 ? `${fmtMs(first)} before its first step` : "";
  return el("div", { class: "wf-row run-row step-run", id: "wf-run",
    title: [`the run${row.name ? `: ${row.name}` : ""}`, took ? `took ${fmtMs(took)}` : "", gap].filter(Boolean).join("\n") },
  el("span", { class: "wf-label" }, `run ${row.name || ""}`.trim()), el("div", { class: "wf-track" },
    first ? el("div", { class: "bar before", style: `left:${(-100 * from) / span}%;width:${(100 * first) / span}%` }) : null, bar),
  el("span", { class: "muted num" }, fmtMs(took)), el("span", { class: "muted", id: "wf-run-gap" }, gap), el("span", {}, ""));
}

// The time window each run's waterfall is zoomed to (`{from, to}`, ms from the run's start), by run.
const zooms = new WeakMap();

// The waterfall of `run` with step `selected` (or null) picked; `href(tab, k)` makes a step's link.
export function waterfall(run, selected, href) {
  const wf = run.waterfall;
  if (!wf || !wf.steps.length) return [el("p", { class: "muted" }, "This trace records no step times.")];
  return [timeline(run, selected, href), stepDetails(run, selected, href)];
}

// The axis, the run's row and a row per step, over the whole run or the window it is zoomed to: drag across the
// bars to zoom to a time range, "Reset zoom" (a button: Tab, Enter) to see the whole run again.
function timeline(run, selected, href) {
  const wf = run.waterfall;
  const whole = wf.span_ms && wf.span_ms > 0 ? wf.span_ms : Math.max(1, ...wf.steps.map((s) => (s.offset_ms || 0) + (s.duration_ms || 0)));
  const zoom = zooms.get(run);
  const from = zoom ? zoom.from : 0;
  const span = zoom ? zoom.to - zoom.from : whole;
  const rows = wf.steps.map((s, k) => {
    const bar = el("div", { class: `bar ${s.kind}${s.error ? " error" : ""}${s.duration_ms === null ? " instant" : ""}` });
    if (s.offset_ms !== null) {
      bar.style.left = `${(100 * (s.offset_ms - from)) / span}%`;
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
  const reset = zoom ? el("div", { class: "wf-zoom", id: "wf-zoom" },
    el("span", { class: "muted", id: "wf-zoom-range" }, `showing +${fmtMs(from)} to +${fmtMs(from + span)} of ${fmtMs(whole)}`), " ",
    el("button", { type: "button", id: "wf-reset-zoom", onclick: () => { zooms.delete(run); redraw(run, href, "wf-zoom-hint"); } }, "Reset zoom"))
    : el("div", { class: "wf-zoom muted", id: "wf-zoom-hint" }, "Drag across the bars to zoom to a time range.");
  const box = el("div", { class: `timeline${zoom ? " zoomed" : ""}`, id: "wf-timeline" }, reset, axis(span, from), runRow(run, span, from), rows);
  brush(box, run, href, from, span);
  return box;
}

// The timeline drawn again (zoomed or not), the step picked kept, the focus on `focus` (an id) when given.
function redraw(run, href, focus) {
  const old = document.getElementById("wf-timeline");
  if (!old) return;
  const picked = old.querySelector(".wf-row.selected");
  old.replaceWith(timeline(run, picked ? Number(picked.dataset.step) : null, href));
  const next = focus && document.getElementById(focus);
  if (next) {
    if (next.tagName !== "BUTTON") next.tabIndex = -1;
    next.focus();
  }
}

// Dragging across the bars of `box` selects a time range and zooms to it (the timeline is drawn again: the drag's
// click reaches no row, and a plain click still picks a step).
function brush(box, run, href, from, span) {
  let start = null;
  let mark = null;
  let dragged = false;
  const track = () => box.querySelector(".bar-row .wf-track") || box.querySelector(".wf-track");
  const at = (x) => {
    const r = track().getBoundingClientRect();
    return from + (span * Math.min(Math.max(x - r.left, 0), r.width)) / Math.max(r.width, 1);
  };
  box.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || !e.target.closest(".wf-track")) return;
    start = e.clientX;
    dragged = false;
  });
  box.addEventListener("pointermove", (e) => {
    if (start === null || Math.abs(e.clientX - start) < 5) return;
    dragged = true;
    box.classList.add("brushing");
    const r = track().getBoundingClientRect();
    const b = box.getBoundingClientRect();
    const left = Math.max(Math.min(start, e.clientX), r.left);
    const right = Math.min(Math.max(start, e.clientX), r.right);
    if (!mark) { mark = el("div", { class: "wf-brush", id: "wf-brush" }); box.appendChild(mark); }
    mark.style.left = `${left - b.left}px`;
    mark.style.width = `${Math.max(right - left, 0)}px`;
  });
  const end = (e) => {
    if (start === null) return;
    const a = at(start);
    const z = at(e.clientX);
    start = null;
    box.classList.remove("brushing");
    if (mark) { mark.remove(); mark = null; }
    if (!dragged || Math.abs(z - a) < span / 1000) return;
    zooms.set(run, { from: Math.min(a, z), to: Math.max(a, z) });
    redraw(run, href, "wf-reset-zoom");
  };
  box.addEventListener("pointerup", end);
  box.addEventListener("pointerleave", (e) => { if (start !== null) end(e); });
}
