// A run's metadata as a table: each field a row, a list or a record as a nested table (its steps as one row each),
// long texts cut with the rest a click away. Values are only ever put on the page as text.
import { el, fmtInt, pretty } from "./dom.js";

const CUT = 300;

// A text, cut to CUT characters with a button for the rest.
function cutText(text) {
  if (text.length <= CUT) return el("span", { class: "meta-text" }, text);
  const node = el("span", { class: "meta-text" }, text.slice(0, CUT));
  const more = el("button", { type: "button", class: "more", onclick: () => { node.textContent = text; more.remove(); } },
    `Show all (${fmtInt(text.length)} characters)`);
  return el("span", {}, node, "… ", more);
}

// A list of records with the same few keys (the steps) as one table, a row each.
function recordsTable(items) {
  const keys = [...new Set(items.flatMap((i) => Object.keys(i)))];
  return el("table", { class: "meta-records" }, el("thead", {}, el("tr", {}, el("th", {}, "#"), keys.map((k) => el("th", {}, k)))),
    el("tbody", {}, items.map((item, n) => el("tr", {}, el("td", { class: "num" }, String(n + 1)),
      keys.map((k) => el("td", {}, item[k] === undefined ? "" : value(item[k], 1)))))));
}

function value(v, depth) {
  if (v === null || v === undefined) return el("span", { class: "muted" }, "null");
  if (typeof v === "string") return cutText(v);
  if (typeof v !== "object") return el("span", { class: "num" }, String(v));
  if (Array.isArray(v)) {
    if (!v.length) return el("span", { class: "muted" }, "[]");
    if (v.every((i) => typeof i !== "object" || i === null)) return cutText(v.map(String).join(", "));
    if (depth < 2 && v.every((i) => i && typeof i === "object" && !Array.isArray(i))) {
      return el("details", { open: v.length <= 20 }, el("summary", {}, `${fmtInt(v.length)} item${v.length === 1 ? "" : "s"}`), recordsTable(v));
    }
    return el("pre", {}, cutText(pretty(v)));
  }
  if (depth >= 2) return cutText(JSON.stringify(v));
  return fields(v, depth + 1);
}

function fields(record, depth) {
  return el("table", { class: depth ? "meta-nested" : "meta-table", id: depth ? null : "metadata" },
    el("tbody", {}, Object.entries(record).map(([k, v]) => el("tr", { "data-key": k }, el("th", { scope: "row" }, k), el("td", {}, value(v, depth))))));
}

// The metadata record as a table (a field per row).
export function metadataTable(meta) {
  if (!meta || typeof meta !== "object" || !Object.keys(meta).length) return el("p", { class: "muted", id: "metadata" }, "No metadata.");
  return el("div", { class: "table-wrap" }, fields(meta, 0));
}
