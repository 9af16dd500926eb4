// spanfold ui: the page's routes and live updates. Trace content is only ever put on the page as text (text nodes,
// attribute values), never parsed as HTML; images are shown only from data: URLs and the server's /api/media/ (a
// blob the media option stored in the trace directory's media/; the page makes no request outside its server).
import { api, el, fmtInt, setStatus } from "./dom.js";
import { onKey } from "./keys.js";
import { fromUrl, list, listParams, loadList } from "./list.js";
import { openRun, pickInPlace, renderRun } from "./run.js";
import { renderCompare } from "./compare.js";
import { renderSession, renderSessions } from "./sessions.js";

const POLL_MS = 1500;

const state = { view: "", run: null };

function view() { return state.view; }

// The header's links: the run list, the sessions.
function nav() {
  const here = state.view === "sessions" || state.view === "session" ? "sessions" : "runs";
  document.querySelectorAll("#nav a").forEach((a) => a.classList.toggle("here", a.dataset.nav === here));
}

async function route() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts[1]) {
      state.view = "run";
      const tab = parts[2] || "conversation";
      if (state.run && state.run.id === parts[1] && pickInPlace(state.run.data, tab, parts[3])) return;
      if (!state.run || state.run.id !== parts[1]) state.run = { id: parts[1], data: await openRun(parts[1]) };
      const named = state.run.data.row.id;
      if (named !== parts[1]) {  // a trace id's start: the run's own permalink takes its place
        state.run.id = named;
        history.replaceState(null, "", location.hash.replace(`#/run/${encodeURIComponent(parts[1])}`, `#/run/${encodeURIComponent(named)}`));
      }
      await renderRun(state.run.data, tab, parts[3]);
    } else if (parts[0] === "sessions") {
      state.view = "sessions";
      fromUrl(query);
      await renderSessions(listParams());
    } else if (parts[0] === "session" && parts[1]) {
      state.view = "session";
      await renderSession(parts[1]);
    } else if (parts[0] === "compare" && parts[1] && parts[2]) {
      state.view = "compare";
      renderCompare(await api(`/api/compare?a=${encodeURIComponent(parts[1])}&b=${encodeURIComponent(parts[2])}`));
    } else {
      state.view = "list";
      state.run = null;
      fromUrl(query);
      await loadList(view);
    }
  } catch (e) {
    state.run = null;
    document.getElementById("main").replaceChildren(el("p", { class: "err-text" }, `Cannot show this: ${e.message}`));
  }
  nav();
}

// The header's line: how many runs, that the page follows the files, and what could not be read.
function showState(s) {
  const problems = s.problems ? ` · ${fmtInt(s.problems)} unreadable (lines or files skipped)` : "";
  setStatus(`${fmtInt(s.runs)} run${s.runs === 1 ? "" : "s"} · live${problems}`);
  document.getElementById("status").classList.toggle("problem", !!s.problems);
}

async function poll() {
  try {
    const s = await api("/api/state");
    if (s.generation !== list.generation && state.view === "list") await loadList(view);
    showState(s);
  } catch (e) {
    setStatus("server not reachable: the page is not updated");
    document.getElementById("status").classList.add("problem");
  }
}

window.addEventListener("hashchange", route);
document.addEventListener("keydown", (e) => onKey(e, view));
route();
poll();
setInterval(poll, POLL_MS);
