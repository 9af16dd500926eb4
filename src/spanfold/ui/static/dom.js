// What every view of the page shares: making elements (trace content only ever as text nodes or attribute values,
// never parsed as HTML), the API, and how numbers, times, tokens and costs are written.

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.appendChild(typeof child === "string" || typeof child === "number"
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";

// An SVG element (the charts: only numbers and fixed labels go into them).
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.appendChild(typeof child === "string" || typeof child === "number"
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}

export async function api(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return response.json();
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return "";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} m ${Math.round((ms % 60000) / 1000)} s`;
}

export function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

// A time to the millisecond (a step's start).
export function fmtTimeMs(iso) {
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toISOString().replace("T", " ");
}

export function fmtInt(n) {
  return typeof n === "number" && isFinite(n) ? Math.round(n).toLocaleString("en-US") : "";
}

// A token count that may be unknown (null: no model call reported it): "–", never 0; "+" when some of the run's
// model calls reported none (the count is of the others).
export const UNKNOWN = "–";
export function fmtCount(n, unreported) {
  if (n === null || n === undefined) return UNKNOWN;
  return `${fmtInt(n)}${unreported ? "+" : ""}`;
}

// What a run's or a total's tokens leave out: "2 model calls reported no tokens" ("" when none).
export function unreportedNote(unreported) {
  if (!unreported) return "";
  return `${fmtInt(unreported)} model call${unreported === 1 ? "" : "s"} reported no tokens`;
}

// A run's or a total's tokens: "58 in / 14 out", "unknown" when no model call reported any; what they leave out after.
export function fmtRunTokens(inp, out, unreported) {
  const note = unreportedNote(unreported);
  if (inp === null || inp === undefined) return note ? `unknown (${note})` : "unknown";
  const text = `${fmtInt(inp)} in / ${fmtInt(out)} out`;
  return note ? `${text} (+ ${note})` : text;
}

// Tokens of a usage record: "58 in / 14 out", with cached (read, written) and reasoning tokens when the trace has them.
export function fmtTokens(usage) {
  if (!usage || typeof usage !== "object") return "";
  const parts = [`${fmtInt(usage.input_tokens || 0)} in`];
  if (usage.cached_tokens) parts.push(`${fmtInt(usage.cached_tokens)} cached`);
  if (usage.cache_write_tokens) parts.push(`${fmtInt(usage.cache_write_tokens)} cache write`);
  parts.push(`${fmtInt(usage.output_tokens || 0)} out`);
  if (usage.reasoning_tokens) parts.push(`${fmtInt(usage.reasoning_tokens)} reasoning`);
  return parts.join(" / ");
}

// A cost {amount, currency} (only when the trace records one: the page never prices tokens itself).
export function fmtCost(cost) {
  if (!cost || typeof cost.amount !== "number") return "";
  const amount = cost.amount;
  // two significant digits below one (0.0021, 0.059, 0.50), cents above
  const digits = amount >= 1 || amount <= 0 ? 2 : Math.min(12, Math.max(2, 1 - Math.floor(Math.log10(amount))));
  const text = amount.toFixed(digits);
  return (cost.currency || "USD") === "USD" ? `$${text}` : `${text} ${cost.currency}`;
}

export function pretty(value) {
  if (typeof value === "string") return value;
  try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
}

export function errorTitle(error) {
  if (!error || typeof error !== "object") return null;
  return error.message ? `${error.type}: ${error.message}` : String(error.type ?? "error");
}

export function errorBlock(error) {
  if (!error) return null;
  const text = typeof error === "object" ? `${error.type ?? "error"}: ${error.message ?? pretty(error)}` : String(error);
  return el("div", { class: "err-text" }, text);
}

export function setStatus(text) { document.getElementById("status").textContent = text; }
