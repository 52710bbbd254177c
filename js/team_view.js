// TeamView: a lead, its teammates and the requests waiting for the lead.
// Plain ES module for anywidget; types are JSDoc, checked with `tsc --checkJs`.

import { ClampWatcher, approvalBox, button, codeText, element, holdsAnswers, renderTranscript, subscribe, toolLabel } from "./dom.js";
import { hookNotebookSaves } from "./saved_state.js";

/**
 * @typedef {import("./wire.js").Member} Member
 * @typedef {import("./wire.js").Request} Request
 * @typedef {import("./wire.js").TeammateApproval} CallApproval
 * @typedef {import("./wire.js").TeamViewReceived} Preview
 * @typedef {import("./wire.js").TeamViewModel} Model
 */

const STATUS_TO_BADGE = { working: "streaming", idle: "finished", failed: "failed", shutdown: "idle" };

/** @param {number|null|undefined} seconds @param {number} now */
export function ago(seconds, now = Date.now() / 1000) {
  if (!seconds) return "";
  const delta = Math.max(0, Math.round(now - seconds));
  if (delta < 60) return `${delta} s ago`;
  if (delta < 3600) return `${Math.round(delta / 60)} min ago`;
  return `${Math.round(delta / 3600)} h ago`;
}

/**
 * A teammate's row: name, role, status (or the tools it waits to have approved),
 * liveness, unread mail, last activity.
 * @param {Member} m
 * @param {CallApproval[]} waiting every teammate's paused calls
 * @param {boolean} open whether its transcript is open under it
 */
function memberRow(m, waiting, open) {
  const row = element("li", "mentra-clickable");
  row.dataset.name = m.name;
  row.title = `Show ${m.name}'s transcript`;
  row.setAttribute("aria-expanded", String(open));
  const badge = element("span", "mentra-badge", m.status === "failed" ? `failed: ${m.error ?? ""}` : m.status);
  badge.dataset.status = STATUS_TO_BADGE[/** @type {keyof typeof STATUS_TO_BADGE} */ (m.status)] ?? m.status;
  const tools = [...new Set(waiting.filter((a) => a.agent === m.name).map((a) => a.name))];
  if (tools.length) {
    badge.textContent = `waiting for approval: ${tools.join(", ")}`;
    badge.dataset.status = "waiting";
  }
  row.append(
    element("span", "mentra-name", m.name),
    element("span", "mentra-model", m.role),
    badge,
    element("span", "mentra-alive", m.alive ? "alive" : "not running"),
    element("span", "mentra-usage", `${m.unread} unread`),
    element("span", "mentra-run", ago(m.last_active)),
  );
  row.tabIndex = 0;
  return row;
}

/**
 * A teammate's request to the lead, with Approve and Reject (which needs a reason).
 * @param {Request} r
 * @param {(answer: import("./wire.js").TeamViewSent) => void} answer sends the answer to the kernel
 * @param {AbortSignal} signal
 */
function requestBox(r, answer, signal) {
  const box = element("div", "mentra-request");
  box.dataset.id = r.id;
  box.append(element("div", "mentra-name", `${r.protocol} from ${r.sender}`), codeText("", r.content));
  const approve = button("mentra-approve", "Approve", "accept");
  const reason = /** @type {HTMLInputElement} */ (element("input", "jp-mod-styled mentra-reason"));
  reason.placeholder = "reason (needed to reject)";
  const reject = button("mentra-reject", "Reject", "warn");
  approve.addEventListener("click", () => answer({ kind: "approve", request_id: r.id }), { signal });
  reject.addEventListener("click", () => {
    const text = reason.value.trim();
    if (!text) {
      reason.focus();
      reason.classList.add("mentra-error");
      return;
    }
    answer({ kind: "reject", request_id: r.id, reason: text });
  }, { signal });
  const controls = element("div", "mentra-controls");
  controls.append(approve, reason, reject);
  box.append(controls);
  return box;
}

const VIEWS_CHANGED = "mentra-team-views";

/** @param {{model: Model, el: HTMLElement}} context */
function render({ model, el }) {
  const root = element("div", "mentra-team");
  const header = element("div", "mentra-header");
  const members = element("ul", "mentra-list mentra-members");
  const pointer = element("div", "mentra-notice-item");
  const requests = element("div", "mentra-requests");
  const approvals = element("div", "mentra-approvals");
  const notice = element("div", "mentra-notice mentra-error");
  root.append(header, members, pointer, requests, approvals, notice);
  // This module runs only for a model the kernel made or whose whole state was
  // saved (a reopened notebook's placeholder renders nothing), and the state alone
  // shows everything: the view hides the saved markdown above it (mentra.css).
  root.dataset.mentraLive = "true";
  el.append(root);
  const controller = new AbortController();
  const { signal } = controller;
  const watcher = new ClampWatcher();
  const leadName = () => String((model.get("lead") ?? {}).name ?? "");
  // The teammate open in this view (each view of a team has its own), how many
  // pages of it, and the transcripts the kernel sent (to every view of the model).
  const viewId = globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random()}`;
  let openName = "";
  let pages = 1;
  /** @type {Map<string, Preview>} */
  const previews = new Map();
  /** @param {string} name @param {number} pageCount */
  const previewKey = (name, pageCount) => `${pageCount}/${name}`;
  /** @param {string} name */
  const openTeammate = (name) => {
    openName = name;
    pages = 1;
    model.send({ kind: "open", name, view: viewId });
    renderMembers();
  };
  const closeTeammate = () => {
    if (!openName) return;
    openName = "";
    model.send({ kind: "close", view: viewId });
    renderMembers();
  };
  /** @param {Preview} message */
  const onMessage = (message) => {
    if (message?.kind !== "preview" || !message.name) return;
    previews.set(previewKey(message.name, message.pages ?? 1), message);
    if (message.name === openName && (message.pages ?? 1) === pages) renderMembers();
  };

  const renderHeader = () => {
    const lead = model.get("lead") ?? {};
    root.dataset.mentraTeam = lead.name ?? "";
    header.replaceChildren(
      element("span", "mentra-name", `team of ${lead.name ?? ""}`),
      element("span", "mentra-model", `lead: ${lead.status ?? ""}`),
      element("span", "mentra-usage", `${lead.unread ?? 0} unread`),
    );
  };

  /** The open teammate's transcript, under its row. @param {HTMLElement} row */
  const previewPanel = (row) => {
    // The pages asked for, or (while they travel) the fewer pages this view had.
    /** @type {Preview|undefined} */
    let p;
    for (let n = pages; n >= 1 && !p; n--) p = previews.get(previewKey(openName, n));
    const panel = element("div", "mentra-preview");
    panel.addEventListener("click", (event) => event.stopPropagation(), { signal }); // reading is not closing
    const head = element("div", "mentra-header");
    head.append(element("span", "mentra-name", `${openName}'s transcript`));
    const close = button("mentra-close", "Close", "minimal");
    close.addEventListener("click", closeTeammate, { signal });
    head.append(close);
    panel.append(head);
    if (!p) {
      panel.append(element("div", "mentra-empty", "loading…"));
      row.append(panel);
      return;
    }
    if (p.has_older) {
      const older = button("mentra-older", "Load older", "minimal");
      older.addEventListener("click", () => {
        pages += 1;
        model.send({ kind: "older", view: viewId });
      }, { signal });
      panel.append(older);
    }
    const transcript = element("div", "mentra-transcript");
    renderTranscript(transcript, p.items ?? [], watcher);
    if (!(p.items ?? []).length && !p.error) transcript.append(element("div", "mentra-empty", "no messages yet"));
    panel.append(transcript);
    if (p.error) panel.append(element("div", "mentra-error", p.error));
    row.append(panel);
  };

  const renderMembers = () => {
    watcher.clear();
    members.replaceChildren();
    /** @type {Member[]} */
    const list = model.get("members") ?? [];
    if (!list.length) members.append(element("li", "mentra-empty", "no teammates yet"));
    /** @type {CallApproval[]} */
    const waiting = model.get("approvals") ?? [];
    for (const m of list) {
      const row = memberRow(m, waiting, openName === m.name);
      row.addEventListener("click", () => (openName === m.name ? closeTeammate() : openTeammate(m.name)),
        { signal });
      row.addEventListener("keydown", (event) => { // opened from the keyboard too
        if (event.target === row && (event.key === "Enter" || event.key === " ")) {
          event.preventDefault();
          row.click();
        }
      }, { signal });
      if (openName === m.name) previewPanel(row);
      members.append(row);
    }
  };

  const renderRequests = () => {
    requests.replaceChildren();
    /** @type {Request[]} */
    const list = model.get("requests") ?? [];
    for (const r of list) requests.append(requestBox(r, (answer) => model.send(answer), signal));
  };

  // A teammate's paused tool call, answered as in its own AgentView.
  const renderApprovals = () => {
    approvals.replaceChildren();
    /** @type {CallApproval[]} */
    const list = model.get("approvals") ?? [];
    for (const a of list) {
      const call = { id: a.id, title: `${a.agent} wants to run ${toolLabel(a.name)}`, input: a.input,
        alwaysTitle: `Run this call, and let ${a.agent} call ${a.name} without asking from now on` };
      approvals.append(approvalBox(call, ({ approve, always, reason }) => model.send(approve
        ? { kind: "approve_call", agent: a.agent, call_id: a.id, always }
        : { kind: "deny_call", agent: a.agent, call_id: a.id, reason }), signal));
    }
  };

  // Requests and paused calls are answered in one view of the team (the newest);
  // the others say how many wait, and where.
  // Rendered again only when what it shows changed: a reason being typed survives
  // another view of the team coming or going.
  let shownAnswers = "";
  const renderAnswers = () => {
    const waiting = (model.get("requests") ?? []).length + (model.get("approvals") ?? []).length;
    const holder = holdsAnswers(root, "data-mentra-team", leadName());
    const key = JSON.stringify([holder, model.get("requests") ?? [], model.get("approvals") ?? []]);
    if (key === shownAnswers) return;
    shownAnswers = key;
    pointer.textContent = !holder && waiting
      ? `${waiting === 1 ? "1 request waits" : `${waiting} requests wait`} for you in the newest view of this team, below`
      : "";
    if (holder) {
      renderRequests();
      renderApprovals();
    } else {
      requests.replaceChildren();
      approvals.replaceChildren();
    }
  };

  const renderNotice = () => {
    notice.textContent = model.get("notice") ?? "";
  };

  const announce = () => document.dispatchEvent(new CustomEvent(VIEWS_CHANGED, { detail: leadName() }));
  document.addEventListener(VIEWS_CHANGED, (event) => {
    if (/** @type {CustomEvent} */ (event).detail === leadName()) renderAnswers();
  }, { signal });

  /** @type {[string, () => void][]} */
  const subscriptions = [
    ["change:lead", () => { renderHeader(); renderAnswers(); }], ["change:members", renderMembers],
    ["change:requests", renderAnswers], ["change:notice", renderNotice],
    ["change:approvals", () => { renderAnswers(); renderMembers(); }],
    ["msg:custom", /** @type {() => void} */ (/** @type {unknown} */ (onMessage))],
  ];
  const unsubscribe = subscribe(model, subscriptions);
  renderHeader();
  renderMembers();
  renderAnswers();
  renderNotice();
  // Attached to the page after `render` returns (and again as a windowed notebook
  // scrolls): then the views decide again.
  const attached = requestAnimationFrame(announce);
  const visibility = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver(announce);
  visibility?.observe(root);

  return () => {
    if (openName) model.send({ kind: "close", view: viewId }); // the kernel stops refreshing it for us
    cancelAnimationFrame(attached);
    visibility?.disconnect();
    controller.abort();
    unsubscribe();
    watcher.clear();
    root.remove();
    announce();
  };
}

/** @param {{model: Model}} context */
function initialize({ model }) {
  hookNotebookSaves(/** @type {any} */ (model).widget_manager); // (saved_state.js)
}

export default { initialize, render };
