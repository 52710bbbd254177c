// SubagentPickerView: a root agent's subagents — badge, list, transcript preview.
// Plain ES module for anywidget; types are JSDoc, checked with `tsc --checkJs`.

import { ClampWatcher, approvalBox, button, element, renderTranscript, subscribe, toolLabel } from "./dom.js";
import { hookNotebookSaves } from "./saved_state.js";
import { shareLiveViews } from "./shared_views.js";

/**
 * @typedef {import("./wire.js").PickerOption} Option
 * @typedef {import("./wire.js").SubagentApproval} CallApproval
 * @typedef {import("./wire.js").Badge} Badge
 * @typedef {import("./wire.js").SubagentPreview} Preview
 * @typedef {import("./wire.js").PickerModel} Model
 */

const ACTIVE = new Set(["pending_init", "running"]);
const TONES = { success: "active", error: "error", neutral: "" };

/** @param {{model: Model, el: HTMLElement}} context */
function render({ model, el }) {
  const root = element("div", "mentra-picker");
  const header = element("div", "mentra-header");
  const title = element("span", "mentra-name");
  const badge = element("span", "mentra-badge mentra-count");
  header.append(title, badge);
  const list = element("ul", "mentra-list");
  const approvals = element("div", "mentra-approvals");
  const notice = element("div", "mentra-notice");
  const preview = element("div", "mentra-preview");
  root.append(header, list, approvals, notice, preview);
  // This module runs only for a model the kernel made or whose whole state was
  // saved (a reopened notebook's placeholder renders nothing), and the state alone
  // shows everything: the view hides the saved markdown above it (mentra.css).
  root.dataset.mentraLive = "true";
  el.append(root);
  const controller = new AbortController();
  const { signal } = controller;
  const watcher = new ClampWatcher();

  const renderHeader = () => {
    title.textContent = `${model.get("root_name")} · subagents`;
    /** @type {Badge} */
    const b = model.get("badge") ?? {};
    badge.textContent = b.text ?? "0";
    badge.dataset.tone = TONES[/** @type {keyof typeof TONES} */ (b.tone ?? "neutral")] ?? "";
  };

  const renderList = () => {
    list.replaceChildren();
    /** @type {Option[]} */
    const options = model.get("options") ?? [];
    if (!options.length) list.append(element("li", "mentra-empty", "no subagents yet"));
    for (const option of options) {
      const row = element("li", "mentra-clickable");
      row.dataset.path = option.path;
      const status = element("span", "mentra-badge", option.status);
      status.dataset.status = ACTIVE.has(option.status) ? "streaming" : option.status === "completed"
        ? "finished" : option.status === "errored" ? "failed" : option.status;
      const waiting = option.waiting_for_approval ?? [];
      if (waiting.length) { // a paused child must not look like a working one
        status.textContent = `waiting for approval: ${waiting.map(toolLabel).join(", ")}`;
        status.dataset.status = "waiting";
      }
      row.append(element("span", "mentra-name", option.label), status, element("span", "mentra-model", option.model));
      row.title = option.path;
      row.addEventListener("click", () => model.send({ kind: "open", path: option.path }), { signal });
      if (ACTIVE.has(option.status)) {
        const stop = button("mentra-interrupt", "Interrupt", "warn");
        stop.addEventListener("click", (event) => {
          event.stopPropagation(); // interrupting is not opening
          model.send({ kind: "interrupt", path: option.path });
        }, { signal });
        row.append(stop);
      }
      list.append(row);
    }
  };

  const renderPreview = () => {
    /** @type {Preview} */
    const p = model.get("preview") ?? {};
    preview.replaceChildren();
    if (!p.path) return;
    const head = element("div", "mentra-header");
    head.append(element("span", "mentra-name", p.path), element("span", "mentra-model", p.model ?? ""));
    const close = button("mentra-close", "Close", "minimal");
    close.addEventListener("click", () => model.send({ kind: "close" }), { signal });
    head.append(close);
    preview.append(head);
    if (p.has_older) {
      const older = button("mentra-older", "Load older", "minimal");
      older.addEventListener("click", () => model.send({ kind: "older" }), { signal });
      preview.append(older);
    }
    const transcript = element("div", "mentra-transcript");
    renderTranscript(transcript, p.items ?? [], watcher);
    preview.append(transcript);
    // A running child's reply so far (the kernel follows it while the preview is open).
    preview.append(live);
    renderLive();
    if (p.error) preview.append(element("div", "mentra-error", p.error));
  };

  const live = element("div", "mentra-live");
  const renderLive = () => {
    live.textContent = model.get("preview_live") ?? "";
  };

  // A child's paused tool call, answered as in its own AgentView (or a teammate's in the TeamView).
  const renderApprovals = () => {
    approvals.replaceChildren();
    /** @type {CallApproval[]} */
    const waiting = model.get("approvals") ?? [];
    for (const a of waiting) {
      const name = a.path.slice(a.path.lastIndexOf("/") + 1);
      const call = { id: a.ref, title: `${name} wants to run ${toolLabel(a.name)}`, input: a.input,
        alwaysTitle: `Run this call, and let ${a.path} call ${a.name} without asking from now on` };
      const box = approvalBox(call, ({ approve, always, reason }) => model.send(approve
        ? { kind: "approve_call", path: a.path, call_id: a.ref, always }
        : { kind: "deny_call", path: a.path, call_id: a.ref, reason }), signal);
      box.dataset.path = a.path;
      approvals.append(box);
    }
  };

  const renderNotice = () => {
    notice.textContent = model.get("notice") ?? "";
  };

  /** @type {[string, () => void][]} */
  const subscriptions = [
    ["change:root_name", renderHeader], ["change:badge", renderHeader], ["change:options", renderList],
    ["change:preview", renderPreview], ["change:notice", renderNotice], ["change:approvals", renderApprovals],
    ["change:preview_live", renderLive],
  ];
  const unsubscribe = subscribe(model, subscriptions);
  renderHeader();
  renderList();
  renderApprovals();
  renderPreview();
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
  shareLiveViews(model); // (shared_views.js)
}

export default { initialize, render };
