// A run's conversation, shown a page of events at a time (more as the reader scrolls down): each message, each tool
// call with its output, and each step's chip. A long text arrives cut (the event's `cut` names where and how long it
// is) and the rest is fetched a slice at a time when asked for.
import { api, el, errorBlock, fmtInt, fmtMs, fmtTime, pretty, saysError, utcTitle } from "./dom.js";
import { MARKDOWN_CHARS, markdown } from "./markdown.js";
import { stepLabel, stepNumbers } from "./waterfall.js";

const FOLD_CHARS = 600;

export function runHref(id, tab, step) {
  return `#/run/${encodeURIComponent(id)}/${tab}${step !== null && step !== undefined ? `/s${step + 1}` : ""}`;
}

// The run's events from `next` on, at least up to event index `to` (from 0), appended to `run.events`.
export async function loadEvents(run, to) {
  while (run.next < run.count && (to === undefined || run.next <= to)) {
    const page = await api(`/api/run/${encodeURIComponent(run.row.id)}/events?from=${run.next}&to=${to === undefined ? 0 : to + 1}`);
    if (page.from !== run.next || !page.events.length) break;
    run.events.push(...page.events);
    run.next = page.next;
    if (to === undefined) break;
  }
}

function cutUnder(ev, path) {
  const cut = ev.cut || {};
  let total = 0;
  for (const [p, n] of Object.entries(cut)) if (p === path || p.startsWith(`${path}/`)) total += n;
  return total;
}

// A button that fetches the rest of a text, a slice at a time, into `node` (which holds `shown` characters of it);
// `whole`: the part is not a string but JSON, whose indented text replaces what is shown from its first slice.
function moreButton(run, ev, path, node, shown, total, whole) {
  let at = whole ? 0 : shown;
  const button = el("button", { class: "more", type: "button" });
  const label = () => { button.textContent = `Show more (${fmtInt(total - at)} more characters of ${fmtInt(total)})`; };
  label();
  button.addEventListener("click", async (e) => {
    e.preventDefault();
    e.stopPropagation();
    button.disabled = true;
    try {
      const slice = await api(`/api/run/${encodeURIComponent(run.row.id)}/part?n=${ev.n}&path=${encodeURIComponent(path)}&from=${at}`);
      if (at === 0 && whole) node.textContent = slice.text;
      else node.appendChild(document.createTextNode(slice.text));
      at = slice.from + slice.text.length;
      total = slice.total;
      if (at >= total) button.remove();
      else { label(); button.disabled = false; }
    } catch (err) {
      button.textContent = `cannot load the rest: ${err.message}`;
    }
  });
  return button;
}

// Text (a string of the event at `path`), folded when long; the rest fetched on request when it was cut.
export function textBlock(run, ev, path, value, label, kind) {
  const text = String(value ?? "");
  const total = (ev.cut || {})[path] || text.length;
  const node = el(kind === "pre" ? "pre" : "div", { class: kind === "pre" ? null : "text" }, text);
  const more = total > text.length ? moreButton(run, ev, path, node, text.length, total, false) : null;
  if (kind !== "pre" || (total <= FOLD_CHARS && text.split("\n").length <= 12)) return el("div", {}, node, more);
  return el("details", {}, el("summary", {}, `${label} (${fmtInt(total)} chars)`), node, more);
}

// An assistant's text as Markdown (made of text nodes); a cut text is fetched whole on request and shown again. A
// text too long for Markdown is shown as it is.
function markdownBlock(run, ev, path, value) {
  const text = String(value ?? "");
  const total = (ev.cut || {})[path] || text.length;
  if (total > MARKDOWN_CHARS) return textBlock(run, ev, path, text, "text", "div");
  const box = el("div", { class: "md-text" }, markdown(text));
  if (total <= text.length) return box;
  const button = el("button", { class: "more", type: "button" }, `Show all (${fmtInt(total)} characters)`);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const slice = await api(`/api/run/${encodeURIComponent(run.row.id)}/part?n=${ev.n}&path=${encodeURIComponent(path)}&from=0`);
      box.replaceChildren(markdown(slice.text));
      button.remove();
    } catch (err) { button.textContent = `cannot load the rest: ${err.message}`; }
  });
  return el("div", {}, box, button);
}

// A JSON part of the event at `path` (arguments, an unknown chunk), indented; whole on request when a string in it was cut.
export function jsonBlock(run, ev, path, value, label) {
  const text = pretty(value);
  const cut = cutUnder(ev, path);
  const node = el("pre", {}, text);
  const more = cut ? moreButton(run, ev, path, node, text.length, text.length + cut, true) : null;
  if (!cut && text.length <= FOLD_CHARS && text.split("\n").length <= 12) return el("div", {}, node);
  return el("details", {}, el("summary", {}, `${label} (${fmtInt(text.length + cut)} chars)`), node, more);
}

// A blob the media option stored (a file:// URI ending in its content-addressed name, sha256 and extension): the ui
// serves it from the trace directory's media/ only, found by that name (a moved directory still shows it).
const MEDIA_NAME = /^file:\/\/[^?#]*\/([0-9a-f]{64}\.[a-z0-9]{1,10})$/;

function localMedia(url) {
  const found = MEDIA_NAME.exec(url);
  return found ? `/api/media/${found[1]}` : null;
}

function chunkUrl(c) {
  let url = c.image_url ?? c.url ?? c.uri ?? "";
  if (url && typeof url === "object") url = url.url ?? "";
  return String(url);
}

// A stored image inline, audio as a player, anything else a link; said as text when the media directory lacks it.
function mediaChunk(kind, url, src) {
  const missing = (node) => () => node.replaceWith(
    el("div", { class: "muted" }, `[${kind}: ${url.slice(0, 200)} — not in the trace directory's media/]`));
  if (kind.includes("image")) {
    const img = el("img", { class: "trace-image", src, alt: "image from the trace" });
    img.addEventListener("error", missing(img));
    return img;
  }
  if (kind.includes("audio")) {
    const audio = el("audio", { class: "trace-audio", controls: true, preload: "metadata", src });
    audio.addEventListener("error", missing(audio));
    return audio;
  }
  return el("div", {}, el("a", { class: "trace-media", href: src, download: src.split("/").pop() },
    `[${kind || "media"}: ${src.split("/").pop()}]`));
}

function chunks(run, ev, path, content, text) {
  if (content === null || content === undefined) return [];
  if (typeof content === "string") return [text(path, content)];
  if (!Array.isArray(content)) return [jsonBlock(run, ev, path, content, "content")];
  return content.map((c, i) => {
    const at = `${path}/${i}`;
    const kind = (c && c.type) || "";
    if (kind === "text") return text(`${at}/text`, String(c.text ?? ""));
    if (kind === "reasoning" || kind === "thinking") {
      const key = c.text !== undefined ? "text" : c.thinking !== undefined ? "thinking" : "content";
      return el("details", { class: "reasoning" }, el("summary", {}, "reasoning"),
        textBlock(run, ev, `${at}/${key}`, c[key] ?? "", "reasoning", "div"));
    }
    const stored = c && typeof c === "object" ? localMedia(chunkUrl(c)) : null;
    if (stored) return mediaChunk(kind, chunkUrl(c), stored);
    if (kind.includes("image")) {
      const url = chunkUrl(c);
      if (/^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/.test(url)) {
        return el("img", { class: "trace-image", src: url, alt: "image from the trace" });
      }
      return el("div", { class: "muted" }, `[image: ${url.slice(0, 200) || "(no URL)"} — not loaded: only data: images and the trace directory's media are shown]`);
    }
    return jsonBlock(run, ev, at, c, kind || "chunk");
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

// How many leading events the run was handed (its metadata's `handed`), when they hold an earlier turn (an answer): a
// later turn of a conversation, whose history is shown apart from what it produced; else 0.
function handedTurns(run) {
  const handed = run.meta && Number.isInteger(run.meta.handed) ? run.meta.handed : 0;
  if (handed <= 0 || handed >= run.count) return 0;
  return run.events.slice(0, handed).some((ev) => ev.role === "assistant") ? handed : 0;
}

// What the conversation needs across pages: which event is which step's, and which tool outputs were shown with their
// call; `markdownOn`: an assistant's text is shown as Markdown.
export function conversationContext(run, selected, markdownOn) {
  return {
    run, selected, markdownOn,
    stepOf: new Map(run.waterfall.steps.map((s, k) => [s.event, k]).filter(([n]) => n !== null)),
    paired: new Set(),
    handed: handedTurns(run),
  };
}

function toolCard(ctx, ev, i, call, output, outputN) {
  const run = ctx.run;
  const fn = call.function || {};
  const k = output ? ctx.stepOf.get(output.n - 1) : undefined;
  const card = el("div", { class: `card${output && output.error ? " error" : ""}${k !== undefined && k === ctx.selected ? " selected" : ""}`,
    id: output ? `event-${output.n}` : null },
  el("div", {}, el("span", { class: "tool-name" }, fn.name || "?"), " ", el("span", { class: "muted" }, call.id || ""),
    k !== undefined ? [" ", stepChip(run, k, ctx.selected)] : null),
  el("div", { class: "label" }, "arguments"),
  jsonBlock(run, ev, `tool_calls/${i}/function/arguments`, fn.arguments ?? {}, "arguments"));
  if (output) {
    const took = output.metadata && output.metadata.duration_ms;
    card.appendChild(el("div", { class: "label" }, "output" + (took !== undefined ? ` · ${fmtMs(took)}` : "")));
    card.appendChild(errorBlock(output.error) || el("span"));
    if (saysError(output.content, output.error)) { /* its text is its error, shown above */ }
    else if (typeof output.content === "string") card.appendChild(textBlock(run, output, "content", output.content, "output", "pre"));
    else card.append(...chunks(run, output, "content", output.content, (p, t) => textBlock(run, output, p, t, "output", "pre")));
  } else if (outputN) {
    card.appendChild(el("div", { class: "label" }, `output: event ${outputN}, further down`));
  } else {
    card.appendChild(el("div", { class: "label" }, "no output recorded"));
  }
  return card;
}

// The message boxes of `events` (a page, in order), `byN`: every loaded event by its number.
export function messages(ctx, events, byN) {
  const run = ctx.run;
  const out = [];
  for (const ev of events) {
    if (ev.role === "tool" && ctx.paired.has(ev.n)) continue;
    if (ctx.handed && ev.n === 1) {
      out.push(el("div", { class: "handed-mark", id: "handed-start" },
        `History: the ${fmtInt(ctx.handed)} event${ctx.handed === 1 ? "" : "s"} this run was handed (earlier turns, the question)`));
    }
    if (ctx.handed && ev.n === ctx.handed + 1) {
      out.push(el("div", { class: "handed-mark", id: "produced-start" }, "What this run produced"));
    }
    const k = ctx.stepOf.get(ev.n - 1);
    const box = el("div", { class: `msg ${ev.role}${ev.n <= ctx.handed ? " handed" : ""}${ev.error ? " error" : ""}${k !== undefined && k === ctx.selected ? " selected" : ""}`,
      id: `event-${ev.n}`, "data-n": ev.n },
    el("div", { class: "role" }, ev.role === "tool" ? `tool output${ev.name ? " · " + ev.name : ""}` : ev.role,
      ev.timestamp ? el("span", { class: "muted", title: utcTitle(ev.timestamp) }, ` · ${fmtTime(ev.timestamp)}`) : null,
      k !== undefined ? [" ", stepChip(run, k, ctx.selected)] : null));
    box.appendChild(errorBlock(ev.error) || el("span"));
    const reasoning = ev.metadata && ev.metadata.reasoning;
    if (reasoning) {
      box.appendChild(el("details", { class: "reasoning" }, el("summary", {}, "reasoning"),
        typeof reasoning === "string" ? textBlock(run, ev, "metadata/reasoning", reasoning, "reasoning", "div")
          : jsonBlock(run, ev, "metadata/reasoning", reasoning, "reasoning")));
    }
    const text = ev.role === "assistant" && ctx.markdownOn ? (p, t) => markdownBlock(run, ev, p, t)
      : ev.role === "tool" ? (p, t) => textBlock(run, ev, p, t, "output", "pre")
        : (p, t) => textBlock(run, ev, p, t, "content", "div");
    if (!saysError(ev.content, ev.error)) box.append(...chunks(run, ev, "content", ev.content, text));
    (ev.tool_calls || []).forEach((call, i) => {
      const outputN = call.id && ev.outputs ? ev.outputs[call.id] : undefined;
      const output = outputN !== undefined ? byN.get(outputN) : undefined;
      if (output) ctx.paired.add(output.n);
      box.appendChild(toolCard(ctx, ev, i, call, output, outputN));
    });
    out.push(box);
  }
  return out;
}

// The conversation of `run` (its loaded events, then more as the reader reaches the end).
export function conversation(run, selected, markdownOn) {
  const ctx = conversationContext(run, selected, markdownOn);
  const byN = new Map(run.events.map((ev) => [ev.n, ev]));
  const list = el("div", { id: "conversation" }, messages(ctx, run.events, byN));
  const footer = el("div", { id: "more-events" });
  let busy = false;
  const more = async () => {
    if (busy || run.next >= run.count) return;
    busy = true;
    const from = run.events.length;
    try {
      await loadEvents(run);
      const page = run.events.slice(from);
      for (const ev of page) byN.set(ev.n, ev);
      list.append(...messages(ctx, page, byN));
    } finally {
      busy = false;
      fill();
      requestAnimationFrame(() => { if (footer.isConnected && footer.getBoundingClientRect().top < innerHeight + 600) more(); });
    }
  };
  const button = el("button", { id: "load-more", type: "button", onclick: more });
  const fill = () => {
    if (run.next >= run.count) { footer.replaceChildren(); observer.disconnect(); return; }
    button.textContent = `Show more events (${fmtInt(run.next)} of ${fmtInt(run.count)} shown)`;
    footer.replaceChildren(button);
  };
  const observer = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) more(); },
    { rootMargin: "600px" });
  fill();
  if (run.next < run.count) observer.observe(footer);
  return [list, footer];
}
