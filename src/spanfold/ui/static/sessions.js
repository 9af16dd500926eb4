// Sessions: the runs of one conversation (the conversation or session id their metadata records), a list of them
// (the list's filters apply), and one session with its runs in the order they started and its totals.
import { api, el, fmtCost, fmtCount, fmtInt, fmtMs, fmtTime, unreportedNote, utcTitle } from "./dom.js";

const SESSIONS_PAGE = 100;
import { filtersOn, statusCell } from "./list.js";
import { numbers } from "./numbers.js";

export function sessionHref(id) {
  return `#/session/${encodeURIComponent(id)}`;
}

function filtersNote() {
  const on = filtersOn();
  return on.length ? el("p", { class: "muted" }, `Among the runs the list's filters keep (${on.join(", ")}).`) : null;
}

function sessionRow(s) {
  return el("tr", { class: "session", "data-id": s.id, onclick: () => { location.hash = sessionHref(s.id); } },
    el("td", {}, el("a", { href: sessionHref(s.id) }, s.id)),
    el("td", { class: "num" }, fmtInt(s.runs)),
    el("td", { title: utcTitle(s.first) }, fmtTime(s.first)), el("td", { title: utcTitle(s.last) }, fmtTime(s.last)),
    el("td", {}, s.agents.join(", ")),
    el("td", { class: "num col-tokens", title: unreportedNote(s.tokens_unreported) }, `${fmtCount(s.tokens_in, s.tokens_unreported)} / ${fmtCount(s.tokens_out, s.tokens_unreported)}`),
    el("td", { class: "num" }, s.cost ? fmtCost(s.cost) : ""),
    el("td", { class: `num${s.errors ? " err-text" : ""}` }, fmtInt(s.errors)),
    el("td", { class: "muted preview" }, s.preview.slice(0, 80)));
}

// The sessions among the runs the list's filters keep (`params`: the list's query), the one active last first, a
// page at a time: "Show more sessions" appends the next page until every one is shown.
export async function renderSessions(params) {
  const query = new URLSearchParams(params);
  query.delete("offset");
  query.delete("limit");
  const page = (offset) => api(`/api/sessions?${query}&offset=${offset}&limit=${SESSIONS_PAGE}`);
  const data = await page(0);
  const body = el("tbody", {}, data.sessions.map(sessionRow));
  const footer = el("div", { class: "pager", id: "sessions-more" });
  let shown = data.sessions.length;
  const fill = (total) => {
    footer.replaceChildren(el("span", { id: "sessions-shown", class: "muted" }, `${fmtInt(shown)} of ${fmtInt(total)} shown`),
      shown < total ? el("button", { type: "button", id: "more-sessions", onclick: async (e) => {
        e.target.disabled = true;
        try {
          const next = await page(shown);
          body.append(...next.sessions.map(sessionRow));
          shown += next.sessions.length;
          fill(next.total);
        } catch (err) { footer.replaceChildren(el("span", { class: "err-text" }, `cannot load more sessions: ${err.message}`)); }
      } }, `Show more sessions (${fmtInt(Math.min(SESSIONS_PAGE, total - shown))} more)`) : null);
  };
  fill(data.total);
  const table = el("table", { id: "sessions" }, el("thead", {}, el("tr", {},
    ["Session", "Runs", "First run", "Last run", "Agents", "Tokens in / out", "Cost", "Runs with errors", "First question"]
      .map((h) => el("th", {}, h)))), body);
  document.getElementById("main").replaceChildren(el("div", { class: "sessions" },
    el("h1", {}, "Sessions"),
    el("p", { class: "muted", id: "sessions-count" },
      `${fmtInt(data.total)} session${data.total === 1 ? "" : "s"}: runs grouped by the conversation or session id their metadata records.`),
    filtersNote(),
    data.total ? [el("div", { class: "table-wrap" }, table), footer]
      : el("p", {}, "No run here records a conversation or session id (gen_ai.conversation.id).")));
}

// One session: its totals, then its runs in the order they started.
export async function renderSession(id) {
  const data = await api(`/api/session?id=${encodeURIComponent(id)}`);
  const s = data.session;
  const runs = data.runs.map((r, i) => el("tr", { class: "run", "data-id": r.id,
    onclick: () => { location.hash = `#/run/${encodeURIComponent(r.id)}`; } },
  el("td", { class: "num" }, String(i + 1)),
  el("td", { title: utcTitle(r.start) }, fmtTime(r.start) || `${r.file}:${r.line}`),
  el("td", {}, r.name || ""),
  el("td", { class: "turn" }, el("a", { href: `#/run/${encodeURIComponent(r.id)}`, class: "turn-question", title: r.question || r.preview },
    (r.question || r.preview).slice(0, 100) || "(no question)"),
  r.answer ? el("div", { class: "muted turn-answer", title: r.answer }, r.answer.slice(0, 100)) : null),
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
      ["#", "Started", "Agent", "Turn: question and answer", "Steps", "Tokens in / out", "Cost", "Duration", "Status"].map((h) => el("th", {}, h)))),
    el("tbody", {}, runs))));
}
