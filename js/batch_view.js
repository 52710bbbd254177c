// BatchView: a batch job's progress — counts, a bar, throughput, cost, time left,
// failed rows; a click on a failed row shows its fork's transcript.
// Plain ES module for anywidget; types are JSDoc, checked with `tsc --checkJs`.

import { ClampWatcher, button, element, renderTranscript, subscribe } from "./dom.js";
import { hookNotebookSaves } from "./saved_state.js";

/**
 * @typedef {import("./wire.js").BatchProgress} Progress
 * @typedef {import("./wire.js").BatchFailure} Failure
 * @typedef {import("./wire.js").BatchRow} Row
 * @typedef {import("./wire.js").BatchViewModel} Model
 */

/** @param {{model: Model, el: HTMLElement}} context */
function render({ model, el }) {
  const root = element("div", "mentra-batch");
  const header = element("div", "mentra-header");
  const title = element("span", "mentra-name");
  const state = element("span", "mentra-badge");
  header.append(title, state);
  const bar = element("div", "mentra-bar");
  const fill = element("div", "mentra-bar-fill");
  bar.append(fill);
  const counts = element("div", "mentra-counts");
  const totals = element("div", "mentra-model");
  const note = element("div", "mentra-notice");
  const failures = element("ul", "mentra-list");
  const notice = element("div", "mentra-notice");
  const row = element("div", "mentra-preview");
  root.append(header, bar, counts, totals, note, failures, notice, row);
  // The state alone shows everything: the view hides the saved markdown above it (mentra.css).
  root.dataset.mentraLive = "true";
  el.append(root);
  const controller = new AbortController();
  const { signal } = controller;
  const watcher = new ClampWatcher();

  const renderProgress = () => {
    /** @type {Partial<Progress>} */
    const p = model.get("progress") ?? {};
    title.textContent = `${model.get("job_name") ?? ""} · ${p.agent ?? ""}`;
    state.textContent = p.state ?? "";
    state.dataset.status = p.state === "running" ? "streaming" : p.state === "finished" ? "finished"
      : p.state === "cancelled" || p.state === "budget" ? "failed" : "idle";
    const total = p.total ?? 0;
    const finished = (p.done ?? 0) + (p.failed ?? 0) + (p.cancelled ?? 0);
    fill.style.width = `${total ? Math.round((100 * finished) / total) : 0}%`;
    bar.title = `${finished} of ${total} rows finished`;
    counts.textContent = `${p.done ?? 0} done · ${p.running ?? 0} running · ${p.failed ?? 0} failed · `
      + `${p.waiting ?? 0} waiting${p.cancelled ? ` · ${p.cancelled} cancelled` : ""} · of ${total}`;
    const parts = [`${(p.tokens ?? 0).toLocaleString()} tokens`, p.cost ?? ""];
    if (p.rows_per_minute) parts.push(`${p.rows_per_minute.toLocaleString()} rows/min`);
    if (p.eta) parts.push(`about ${p.eta} left`);
    if (p.throttled) parts.push(`slowed ${p.throttled} times by the provider's rate limit`);
    totals.textContent = parts.join(" · ");
    note.textContent = p.note ?? "";
  };

  const renderFailures = () => {
    failures.replaceChildren();
    /** @type {Failure[]} */
    const failed = model.get("failures") ?? [];
    for (const f of failed) {
      const item = element("li", "mentra-clickable");
      item.dataset.index = String(f.index);
      item.append(element("span", "mentra-name", `row ${f.index}`), element("span", "mentra-model", f.agent),
        element("span", "mentra-error", f.error));
      item.title = `Open ${f.agent}'s transcript`;
      item.addEventListener("click", () => model.send({ kind: "open_row", index: f.index }), { signal });
      failures.append(item);
    }
  };

  const renderRow = () => {
    /** @type {Row} */
    const r = model.get("row") ?? {};
    row.replaceChildren();
    if (r.agent === undefined) return;
    const head = element("div", "mentra-header");
    head.append(element("span", "mentra-name", `row ${r.index} · ${r.agent}`));
    const close = button("mentra-close", "Close", "minimal");
    close.addEventListener("click", () => model.send({ kind: "close_row" }), { signal });
    head.append(close);
    const transcript = element("div", "mentra-transcript");
    renderTranscript(transcript, r.items ?? [], watcher);
    row.append(head, transcript);
  };

  const renderNotice = () => {
    notice.textContent = model.get("notice") ?? "";
  };

  /** @type {[string, () => void][]} */
  const subscriptions = [
    ["change:job_name", renderProgress], ["change:progress", renderProgress],
    ["change:failures", renderFailures], ["change:row", renderRow], ["change:notice", renderNotice],
  ];
  const unsubscribe = subscribe(model, subscriptions);
  renderProgress();
  renderFailures();
  renderRow();
  renderNotice();

  return () => {
    controller.abort();
    watcher.clear();
    unsubscribe();
    root.remove();
  };
}

/** @param {{model: Model}} context */
function initialize({ model }) {
  hookNotebookSaves(/** @type {any} */ (model).widget_manager); // (saved_state.js)
}

export default { initialize, render };
