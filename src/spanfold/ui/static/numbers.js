// Numbers over the runs the list shows: totals (runs, errors and error rate, tokens, cost when the traces record it,
// duration percentiles) and a small chart of runs, errors, tokens and cost over time (the server's /api/stats).
import { el, fmtCost, fmtInt, fmtMs, fmtRunTokens, svg } from "./dom.js";

// The chart is drawn 1600 units wide, shown as wide as the page (about 0.8 units to a pixel): a row of bars 26 units
// tall under its label.
const WIDTH = 1600;
const LABEL = 20;
const ROW = 26;
//: Times written under the chart, evenly spaced (its ends among them).
const TICKS = 5;

function compact(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}G`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(0)}k`;
  return fmtInt(n);
}

// A chart edge's time, to the second when the runs span less than a day.
function when(ms, bins) {
  const text = new Date(ms).toISOString().replace("T", " ");
  return bins[bins.length - 1].end - bins[0].start < 86_400_000 ? text.slice(0, 19) : text.slice(0, 16);
}

function binTitle(b) {
  const from = new Date(b.start).toISOString().replace("T", " ").slice(0, 19);
  const to = new Date(b.end).toISOString().replace("T", " ").slice(0, 19);
  return [`${from} – ${to}`, `${fmtInt(b.runs)} runs, ${fmtInt(b.with_errors)} with errors`,
    `tokens ${fmtRunTokens(b.tokens_in, b.tokens_out, b.tokens_unreported)}`, b.cost ? `cost ${fmtCost(b.cost)}` : ""]
    .filter(Boolean).join("\n");
}

// One row of the chart: its label, then a bar per bin of `value(bin)`, and `over(bin)` drawn over it (errors) when
// given; `fmt` writes the row's largest value.
function chartRow(bins, y0, label, value, cls, over, fmt) {
  const top = Math.max(...bins.map(value), 0);
  const y = y0 + LABEL;
  const w = WIDTH / bins.length;
  const bars = bins.map((b, i) => {
    const v = value(b);
    const h = top ? (ROW - 4) * (v / top) : 0;
    const o = over ? over(b) : 0;
    const oh = top ? (ROW - 4) * (o / top) : 0;
    return svg("g", { class: "bin" }, svg("title", {}, binTitle(b)),
      svg("rect", { x: i * w + 0.5, y: y + ROW - h, width: Math.max(1, w - 1), height: h, class: cls }),
      o ? svg("rect", { x: i * w + 0.5, y: y + ROW - oh, width: Math.max(1, w - 1), height: oh, class: "errors" }) : null,
      svg("rect", { x: i * w, y, width: w, height: ROW, class: "hit" }));
  });
  return [svg("text", { x: 2, y: y0 + LABEL - 3, class: "label" }, `${label}: up to ${fmt(top)} in a bin`), ...bars];
}

function chart(stats) {
  const bins = stats.bins;
  if (!bins.length) return null;
  const rows = [
    ["runs (with errors in red)", (b) => b.runs, "runs", (b) => b.with_errors, compact],
    ["tokens", (b) => (b.tokens_in ?? 0) + (b.tokens_out ?? 0), "tokens", null, compact],
  ];
  if (stats.cost) rows.push(["cost", (b) => (b.cost ? b.cost.amount : 0), "cost", null, (v) => fmtCost({ amount: v, currency: stats.cost.currency })]);
  const height = rows.length * (LABEL + ROW + 4);
  return el("div", { id: "chart" }, svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, role: "img",
    "aria-label": "runs, errors, tokens and cost over time" },
  rows.map(([label, value, cls, over, fmt], i) => chartRow(bins, i * (LABEL + ROW + 4), label, value, cls, over, fmt))),
  axisLabels(bins));
}

// The times under the chart: its start, its end and evenly between (one when the runs started at the same moment).
function axisLabels(bins) {
  const start = bins[0].start;
  const end = bins[bins.length - 1].end;
  const count = end - start > 1000 ? TICKS : 1;
  const labels = Array.from({ length: count }, (_, i) => el("span", {}, when(start + ((end - start) * i) / Math.max(1, count - 1), bins)));
  return el("div", { class: "chart-axis muted", title: "UTC" }, labels);
}

// The totals line and the chart of the runs the filters keep.
export function numbers(stats) {
  const rate = stats.error_rate === null ? "" : ` (${(100 * stats.error_rate).toFixed(1)}%)`;
  let cost = null;
  if (stats.cost) cost = `${fmtCost(stats.cost)}${stats.priced < stats.runs ? ` (${fmtInt(stats.priced)} of the runs record one)` : ""}`;
  else if (stats.currencies) cost = `in ${stats.currencies.join(", ")} (not added up)`;
  const facts = [
    ["runs", fmtInt(stats.runs)],
    ["with errors", `${fmtInt(stats.with_errors)}${rate}`, stats.with_errors ? "err-text" : ""],
    ["failed", fmtInt(stats.failed), stats.failed ? "err-text" : ""],
    ["tokens", fmtRunTokens(stats.tokens_in, stats.tokens_out, stats.tokens_unreported)],
    cost ? ["cost", cost] : null,
    stats.duration_p50 !== null ? ["duration", `p50 ${fmtMs(stats.duration_p50)} · p95 ${fmtMs(stats.duration_p95)}`] : null,
  ].filter(Boolean);
  return el("div", { id: "numbers" },
    el("div", { class: "facts", id: "totals" }, facts.map(([k, v, cls]) => el("span", { class: cls || "", "data-total": k }, el("b", {}, `${k} `), v))),
    chart(stats));
}
