// spanfold ui: the page's routes and live updates. Trace content is only ever put on the page as text (text nodes,
// attribute values), never parsed as HTML; images are shown only from data: URLs (the page makes no request outside
// its server).
import { api, el, fmtInt, setStatus } from "./dom.js";
import { list, loadList } from "./list.js";
import { openRun, renderRun } from "./run.js";
import { renderCompare } from "./compare.js";

const POLL_MS = 1500;

const state = { view: "", run: null };

function view() { return state.view; }

async function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts[1]) {
      state.view = "run";
      if (!state.run || state.run.id !== parts[1]) state.run = { id: parts[1], data: await openRun(parts[1]) };
      await renderRun(state.run.data, parts[2] || "conversation", parts[3]);
    } else if (parts[0] === "compare" && parts[1] && parts[2]) {
      state.view = "compare";
      renderCompare(await api(`/api/compare?a=${encodeURIComponent(parts[1])}&b=${encodeURIComponent(parts[2])}`));
    } else {
      state.view = "list";
      state.run = null;
      await loadList(view);
    }
  } catch (e) {
    state.run = null;
    document.getElementById("main").replaceChildren(el("p", { class: "err-text" }, `Cannot show this: ${e.message}`));
  }
}

async function poll() {
  try {
    const s = await api("/api/state");
    if (s.generation !== list.generation && state.view === "list") await loadList(view);
    else if (state.view !== "list") setStatus(`${fmtInt(s.total)} runs · live`);
  } catch (e) { setStatus("server not reachable"); }
}

window.addEventListener("hashchange", route);
route();
setInterval(poll, POLL_MS);
