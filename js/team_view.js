// TeamView: a lead, its teammates and the requests waiting for the lead.
// Plain ES module for anywidget; types are JSDoc, checked with `tsc --checkJs`.

import { ClampWatcher, approvalBox, button, codeText, element, holdsAnswers, renderTranscript, subscribe, toolLabel } from "./dom.js";
import { hookNotebookSaves } from "./saved_state.js";
import { shareLiveViews } from "./shared_views.js";

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

/** @param {string} name @param {number} pages */
const previewKey = (name, pages) => `${pages}/${name}`;

/**
 * One rendered TeamView: its elements, which teammate it has open, and one render
 * method per region (header, members with the open transcript, requests and paused
 * calls, notice).
 */
class TeamViewRender {
  /** @param {Model} model @param {HTMLElement} el */
  constructor(model, el) {
    this.model = model;
    this.root = element("div", "mentra-team");
    this.header = element("div", "mentra-header");
    this.members = element("ul", "mentra-list mentra-members");
    this.pointer = element("div", "mentra-notice-item");
    this.requests = element("div", "mentra-requests");
    this.approvals = element("div", "mentra-approvals");
    this.notice = element("div", "mentra-notice mentra-error");
    this.root.append(this.header, this.members, this.pointer, this.requests, this.approvals, this.notice);
    // This module runs only for a model the kernel made or whose whole state was
    // saved (a reopened notebook's placeholder renders nothing), and the state alone
    // shows everything: the view hides the saved markdown above it (mentra.css).
    this.root.dataset.mentraLive = "true";
    el.append(this.root);
    this.controller = new AbortController();
    this.signal = this.controller.signal;
    this.watcher = new ClampWatcher();
    // The teammate open in this view (each view of a team has its own), how many
    // pages of it, and the transcripts the kernel sent (to every view of the model).
    this.viewId = globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random()}`;
    this.openName = "";
    this.pages = 1;
    /** @type {Map<string, Preview>} */
    this.previews = new Map();
    // What the answers show: rendered again only when it changed, so a reason being
    // typed survives another view of the team coming or going.
    this.shownAnswers = "";
  }

  leadName() {
    return String(this.model.get("lead")?.name ?? "");
  }

  /** @param {string} name */
  openTeammate(name) {
    this.openName = name;
    this.pages = 1;
    this.model.send({ kind: "open", name, view: this.viewId });
    this.renderMembers();
  }

  closeTeammate = () => {
    if (!this.openName) return;
    this.openName = "";
    this.model.send({ kind: "close", view: this.viewId });
    this.renderMembers();
  };

  /** @param {Preview} message */
  onMessage = (message) => {
    if (message?.kind !== "preview" || !message.name) return;
    this.previews.set(previewKey(message.name, message.pages ?? 1), message);
    if (message.name === this.openName && (message.pages ?? 1) === this.pages) this.renderMembers();
  };

  renderHeader() {
    const lead = this.model.get("lead") ?? {};
    this.root.dataset.mentraTeam = lead.name ?? "";
    this.header.replaceChildren(
      element("span", "mentra-name", `team of ${lead.name ?? ""}`),
      element("span", "mentra-model", `lead: ${lead.status ?? ""}`),
      element("span", "mentra-usage", `${lead.unread ?? 0} unread`),
    );
  }

  /** The open teammate's transcript, under its row. @param {HTMLElement} row */
  previewPanel(row) {
    const { signal, openName } = this;
    // The pages asked for, or (while they travel) the fewer pages this view had.
    /** @type {Preview|undefined} */
    let p;
    for (let n = this.pages; n >= 1 && !p; n--) p = this.previews.get(previewKey(openName, n));
    const panel = element("div", "mentra-preview");
    panel.addEventListener("click", (event) => event.stopPropagation(), { signal }); // reading is not closing
    const head = element("div", "mentra-header");
    head.append(element("span", "mentra-name", `${openName}'s transcript`));
    const close = button("mentra-close", "Close", "minimal");
    close.addEventListener("click", this.closeTeammate, { signal });
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
        this.pages += 1;
        this.model.send({ kind: "older", view: this.viewId });
      }, { signal });
      panel.append(older);
    }
    const transcript = element("div", "mentra-transcript");
    renderTranscript(transcript, p.items ?? [], this.watcher);
    if (!(p.items ?? []).length && !p.error) transcript.append(element("div", "mentra-empty", "no messages yet"));
    panel.append(transcript);
    if (p.error) panel.append(element("div", "mentra-error", p.error));
    row.append(panel);
  }

  renderMembers = () => {
    const { members, signal } = this;
    this.watcher.clear();
    members.replaceChildren();
    /** @type {Member[]} */
    const list = this.model.get("members") ?? [];
    if (!list.length) members.append(element("li", "mentra-empty", "no teammates yet"));
    /** @type {CallApproval[]} */
    const waiting = this.model.get("approvals") ?? [];
    for (const m of list) {
      const row = memberRow(m, waiting, this.openName === m.name);
      const open = () => (this.openName === m.name ? this.closeTeammate() : this.openTeammate(m.name));
      row.addEventListener("click", open, { signal });
      row.addEventListener("keydown", (event) => { // opened from the keyboard too
        if (event.target === row && (event.key === "Enter" || event.key === " ")) {
          event.preventDefault();
          row.click();
        }
      }, { signal });
      if (this.openName === m.name) this.previewPanel(row);
      members.append(row);
    }
  };

  renderRequests() {
    this.requests.replaceChildren();
    /** @type {Request[]} */
    const list = this.model.get("requests") ?? [];
    for (const r of list) this.requests.append(requestBox(r, (answer) => this.model.send(answer), this.signal));
  }

  // A teammate's paused tool call, answered as in its own AgentView.
  renderApprovals() {
    const { model } = this;
    this.approvals.replaceChildren();
    /** @type {CallApproval[]} */
    const list = model.get("approvals") ?? [];
    for (const a of list) {
      const call = { id: a.id, title: `${a.agent} wants to run ${toolLabel(a.name)}`, input: a.input,
        alwaysTitle: `Run this call, and let ${a.agent} call ${a.name} without asking from now on` };
      this.approvals.append(approvalBox(call, ({ approve, always, reason }) => model.send(approve
        ? { kind: "approve_call", agent: a.agent, call_id: a.id, always }
        : { kind: "deny_call", agent: a.agent, call_id: a.id, reason }), this.signal));
    }
  }

  // Requests and paused calls are answered in one view of the team (the newest);
  // the others say how many wait, and where.
  renderAnswers = () => {
    const { model } = this;
    const waiting = (model.get("requests") ?? []).length + (model.get("approvals") ?? []).length;
    const holder = holdsAnswers(this.root, "data-mentra-team", this.leadName());
    const key = JSON.stringify([holder, model.get("requests") ?? [], model.get("approvals") ?? []]);
    if (key === this.shownAnswers) return;
    this.shownAnswers = key;
    this.pointer.textContent = !holder && waiting
      ? `${waiting === 1 ? "1 request waits" : `${waiting} requests wait`} for you in the newest view of this team, below`
      : "";
    if (holder) {
      this.renderRequests();
      this.renderApprovals();
    } else {
      this.requests.replaceChildren();
      this.approvals.replaceChildren();
    }
  };

  renderNotice = () => {
    this.notice.textContent = this.model.get("notice") ?? "";
  };

  announce = () => document.dispatchEvent(new CustomEvent(VIEWS_CHANGED, { detail: this.leadName() }));

  /** Other views of the team coming and going, and the model's events. */
  subscribe() {
    document.addEventListener(VIEWS_CHANGED, (event) => {
      if (/** @type {CustomEvent} */ (event).detail === this.leadName()) this.renderAnswers();
    }, { signal: this.signal });
    /** @type {[string, () => void][]} */
    const subscriptions = [
      ["change:lead", () => { this.renderHeader(); this.renderAnswers(); }], ["change:members", this.renderMembers],
      ["change:requests", this.renderAnswers], ["change:notice", this.renderNotice],
      ["change:approvals", () => { this.renderAnswers(); this.renderMembers(); }],
      ["msg:custom", /** @type {() => void} */ (/** @type {unknown} */ (this.onMessage))],
    ];
    return subscribe(this.model, subscriptions);
  }

  renderAll() {
    this.renderHeader();
    this.renderMembers();
    this.renderAnswers();
    this.renderNotice();
  }
}

/** @param {{model: Model, el: HTMLElement}} context */
function render({ model, el }) {
  const view = new TeamViewRender(model, el);
  const unsubscribe = view.subscribe();
  view.renderAll();
  // Attached to the page after `render` returns (and again as a windowed notebook
  // scrolls): then the views decide again.
  const attached = requestAnimationFrame(view.announce);
  const visibility = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver(view.announce);
  visibility?.observe(view.root);

  return () => {
    if (view.openName) model.send({ kind: "close", view: view.viewId }); // the kernel stops refreshing it for us
    cancelAnimationFrame(attached);
    visibility?.disconnect();
    view.controller.abort();
    unsubscribe();
    view.watcher.clear();
    view.root.remove();
    view.announce();
  };
}

/** @param {{model: Model}} context */
function initialize({ model }) {
  hookNotebookSaves(/** @type {any} */ (model).widget_manager); // (saved_state.js)
  shareLiveViews(model); // (shared_views.js)
}

export default { initialize, render };
