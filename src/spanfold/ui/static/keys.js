// The keyboard: j / k through the runs of the list and through the steps of a run, Enter to open the current run,
// x to pick it to compare, / to search, t / c for a run's timeline and conversation, Esc to leave a field or go back
// to the list. Keys typed into a field are the field's (but Esc).
import { currentRow, moveCurrent, urlQuery } from "./list.js";
import { runHref, shown } from "./run.js";

function typing(target) {
  return target && (target.isContentEditable || ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName));
}

// Step `k` of the run shown, picked (the hash changes in place: no new history entry per key).
function pickStep(step) {
  const run = shown.run;
  const count = run && run.waterfall ? run.waterfall.steps.length : 0;
  if (!count) return;
  const k = shown.step === null ? (step > 0 ? 0 : count - 1) : Math.max(0, Math.min(count - 1, shown.step + step));
  const tab = ["timeline", "conversation"].includes(shown.tab) ? shown.tab : "timeline";
  shown.step = k;  // the next key moves on from here, before the page has caught up
  location.replace(runHref(run.row.id, tab, k));
}

// The list, with the filters it had.
function listHash() {
  const query = urlQuery();
  return `#/${query ? `?${query}` : ""}`;
}

export function onKey(e, view) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "Escape") {
    if (typing(e.target)) {
      if (e.target.type === "search" && e.target.value) { e.target.value = ""; e.target.dispatchEvent(new Event("input")); }
      e.target.blur();
    } else if (view() !== "list") {
      location.hash = listHash();
    }
    return;
  }
  if (typing(e.target)) return;
  const key = e.key;
  if (key === "/") {
    e.preventDefault();
    if (view() !== "list") { location.hash = listHash(); setTimeout(() => document.getElementById("f-q")?.focus(), 300); }
    else document.getElementById("f-q")?.focus();
  } else if (view() === "list") {
    if (key === "j" || key === "ArrowDown") { e.preventDefault(); moveCurrent(1); }
    else if (key === "k" || key === "ArrowUp") { e.preventDefault(); moveCurrent(-1); }
    else if (key === "Enter" || key === "o") { const row = currentRow(); if (row) row.click(); }
    else if (key === "x") { const row = currentRow(); if (row) row.querySelector("input.pick").click(); }
  } else if (view() === "run" && shown.run) {
    if (key === "j") pickStep(1);
    else if (key === "k") pickStep(-1);
    else if (key === "t" || key === "c") location.hash = runHref(shown.run.row.id, key === "t" ? "timeline" : "conversation", shown.step);
  }
}
