// Sessions: the runs of one conversation (the conversation or session id their metadata records), a list of them
// (the list's filters apply), and one session with its runs in the order they started and its totals.
import { api, el, fmtCost, fmtCount, fmtInt, fmtMs, fmtTime, unreportedNote } from "./dom.js";
import { list, statusCell } from "./list.js";
import { numbers } from "./numbers.js";

export function sessionHref(id) {
  return `#/session/${encodeURIComponent(id)}`;
}

function filtersNote() {
  const on = ["q", "tool", "model", "agent", "service", "status", "errors", "user", "from", "to"].filter((k) => list[k]);
  return on.length ? el("p", { class: "muted" }, `Among the runs the list's filters keep (${on.join(", ")}).`) : null;
}

// The sessions among the runs the list's filters keep, the one active last first.
export async function renderSessions(params) {
  const data = await api(`/api/sessions?${params}`);
  const rows = data.sessions.map((s) => el("tr", { class: "session", "data-id": s.id,
    onclick: () => { location.hash = sessionHref(s.id); } },
  el("td", {}, el("a", { href: sessionHref(s.id) }, s.id)),
  el("td", { class: "num" }, fmtInt(s.runs)),
  el("td", {}, fmtTime(s.first)), el("td", {}, fmtTime(s.last)),
  el("td", {}, s.agents.join(", ")),
  el("td", { class: "num col-tokens", title: unreportedNote(s.tokens_unreported) }, `${fmtCount(s.tokens_in, s.tokens_unreported)} / ${fmtCount(s.tokens_out, s.tokens_unreported)}`),
  el("td", { class: "num" }, s.cost ? fmtCost(s.cost) : ""),
  el("td", { class: `num${s.errors ? " err-text" : ""}` }, fmtInt(s.errors)),
  el("td", { class: "muted preview" }, s.preview.slice(0, 80))));
  const table = el("table", { id: "sessions" }, el("thead", {}, el("tr", {},
    ["Session", "Runs", "First run", "Last run", "Agents", "Tokens in / out", "Cost", "Runs with errors", "First question"]
      .map((h) => el("th", {}, h)))), el("tbody", {}, rows));
  document.getElementById("main").replaceChildren(el("div", { class: "sessions" },
    el("h1", {}, "Sessions"),
    el("p", { class: "muted", id: "sessions-count" },
      `${fmtInt(data.total)} session${data.total === 1 ? "" : "s"}: runs grouped by the conversation or session id their metadata records.`),
    filtersNote(),
    data.total ? el("div", { class: "table-wrap" }, table)
      : el("p", {}, "No run here records a conversation or session id (gen_ai.conversation.id).")));
}

// One session: its totals, then its runs in the order they started.
export async function renderSession(id) {
  const data = await api(`/api/session?id=${encodeURIComponent(id)}`);
  const s = data.session;
  const runs = data.runs.map((r, i) => el("tr", { class: "run", "data-id": r.id,
    onclick: () => { location.hash = `#/run/${encodeURIComponent(r.id)}`; } },
  el("td", { class: "num" }, String(i + 1)),
  el("td", {}, fmtTime(r.start) || `${r.file}:${r.line}`),
  el("td", {}, r.name || ""),
  el("td", {}, el("a", { href: `#/run/${encodeURIComponent(r.id)}` }, r.preview.slice(0, 100) || "(no question)")),
  el("td", { class: "num" }, fmtInt(r.steps)),
  el("td", { class: "num col-tokens", title: unreportedNote(r.tokens_unreported) }, `${fmtCount(r.tokens_in, r.tokens_unreported)} / ${fmtCount(r.tokens_out, r.tokens_unreported)}`),
  el("td", { class: "num" }, r.cost ? fmtCost(r.cost) : ""),
  el("td", { class: "num" }, fmtMs(r.duration_ms)),
  statusCell(r, "td")));
  document.getElementById("main").replaceChildren(
    el("div", { class: "run-head" }, el("h1", {}, `Session ${s.id}`),
      el("div", { class: "facts" }, el("span", {}, el("b", {}, "agents "), s.agents.join(", ") || "—"),
        s.users.length ? el("span", {}, el("b", {}, "users "), s.users.join(", ")) : null,
        el("span", {}, el("b", {}, "from "), fmtTime(s.first) || "—"), el("span", {}, el("b", {}, "to "), fmtTime(s.last) || "—"),
        el("a", { href: "#/sessions" }, "all sessions"))),
    numbers(data.stats),
    el("div", { class: "table-wrap" }, el("table", { id: "session-runs" }, el("thead", {}, el("tr", {},
      ["#", "Started", "Agent", "Question", "Steps", "Tokens in / out", "Cost", "Duration", "Status"].map((h) => el("th", {}, h)))),
    el("tbody", {}, runs))));
}
