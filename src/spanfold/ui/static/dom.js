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

const pad = (n) => String(n).padStart(2, "0");

// A time in this browser's local time zone, to the second ("2026-01-01 09:00:05"); `utcTitle` gives it in UTC.
export function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// A time in UTC, for a title ("UTC 2026-01-01 00:00:05.000Z"); "" when there is none.
export function utcTitle(iso) {
  const d = iso ? new Date(iso) : null;
  return d && !isNaN(d) ? `UTC ${d.toISOString().replace("T", " ")}` : "";
}

// A UTC ISO time as a datetime-local input's value (this browser's local time, to the minute).
export function localInput(iso) {
  const d = iso ? new Date(iso) : null;
  if (!d || isNaN(d)) return "";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
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
  if ("output_tokens" in usage) parts.push(`${fmtInt(usage.output_tokens || 0)} out`);  // (an embeddings call has none)
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

// An error as one line, "Type: message", the type written once (a message that starts with it is written as it is).
export function errorTitle(error) {
  if (!error || typeof error !== "object") return null;
  const kind = String(error.type ?? "error");
  if (error.message === undefined || error.message === null || error.message === "") return kind;
  const message = typeof error.message === "string" ? error.message : pretty(error.message);
  const short = kind.split(".").pop();
  return message.startsWith(`${kind}:`) || message.startsWith(`${short}:`) ? message : `${kind}: ${message}`;
}

export function errorBlock(error) {
  if (!error) return null;
  return el("div", { class: "err-text" }, typeof error === "object" ? errorTitle(error) : String(error));
}

// Whether an event's text only says its error again (an error event's text is "Type: message"; a failed tool's output
// is often its message): shown once, as the error.
export function saysError(content, error) {
  if (!error || typeof error !== "object" || typeof content !== "string") return false;
  const text = content.trim();
  const message = typeof error.message === "string" ? error.message.trim() : "";
  return text === errorTitle(error) || text === String(error.type ?? "") || (message !== "" && text === message);
}

export function setStatus(text) { document.getElementById("status").textContent = text; }
