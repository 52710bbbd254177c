// TeamView: a lead, its teammates and the requests waiting for the lead.
// Plain ES module for anywidget; types are JSDoc, checked with `tsc --checkJs`.

import { approvalBox, element, subscribe, toolLabel } from "./dom.js";

/**
 * @typedef {{name: string, role: string, model: string, status: string, error?: string|null,
 *   alive: boolean, unread: number, last_active?: number|null}} Member
 * @typedef {{id: string, protocol: string, sender: string, content: string, created_at: number}} Request
 * @typedef {{agent: string, id: string, name: string, input: string}} CallApproval
 * @typedef {import("./dom.js").Model} Model
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

/** @param {{model: Model, el: HTMLElement}} context */
export function render({ model, el }) {
  const root = element("div", "mentra-team");
  const header = element("div", "mentra-header");
  const members = element("ul", "mentra-list mentra-members");
  const requests = element("div", "mentra-requests");
  const approvals = element("div", "mentra-approvals");
  const notice = element("div", "mentra-notice mentra-error");
  root.append(header, members, requests, approvals, notice);
  el.append(root);
  const controller = new AbortController();
  const { signal } = controller;

  const renderHeader = () => {
    const lead = model.get("lead") ?? {};
    header.replaceChildren(
      element("span", "mentra-name", `team of ${lead.name ?? ""}`),
      element("span", "mentra-model", `lead: ${lead.status ?? ""}`),
      element("span", "mentra-usage", `${lead.unread ?? 0} unread`),
    );
  };

  const renderMembers = () => {
    members.replaceChildren();
    /** @type {Member[]} */
    const list = model.get("members") ?? [];
    if (!list.length) members.append(element("li", "mentra-empty", "no teammates yet"));
    /** @type {CallApproval[]} */
    const waiting = model.get("approvals") ?? [];
    for (const m of list) {
      const row = element("li");
      row.dataset.name = m.name;
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
      members.append(row);
    }
  };

  const renderRequests = () => {
    requests.replaceChildren();
    /** @type {Request[]} */
    const list = model.get("requests") ?? [];
    for (const r of list) {
      const box = element("div", "mentra-request");
      box.dataset.id = r.id;
      box.append(element("div", "mentra-name", `${r.protocol} from ${r.sender}`), element("pre", "", r.content));
      const approve = element("button", "mentra-approve", "Approve");
      const reason = /** @type {HTMLInputElement} */ (element("input", "mentra-reason"));
      reason.placeholder = "reason (needed to reject)";
      const reject = element("button", "mentra-reject", "Reject");
      approve.addEventListener("click", () => model.send({ kind: "approve", request_id: r.id }), { signal });
      reject.addEventListener("click", () => {
        const text = reason.value.trim();
        if (!text) {
          reason.focus();
          reason.classList.add("mentra-error");
          return;
        }
        model.send({ kind: "reject", request_id: r.id, reason: text });
      }, { signal });
      const controls = element("div", "mentra-controls");
      controls.append(approve, reason, reject);
      box.append(controls);
      requests.append(box);
    }
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

  const renderNotice = () => {
    notice.textContent = model.get("notice") ?? "";
  };

  /** @type {[string, () => void][]} */
  const subscriptions = [
    ["change:lead", renderHeader], ["change:members", renderMembers],
    ["change:requests", renderRequests], ["change:notice", renderNotice],
    ["change:approvals", () => { renderApprovals(); renderMembers(); }],
  ];
  const unsubscribe = subscribe(model, subscriptions);
  renderHeader();
  renderMembers();
  renderRequests();
  renderApprovals();
  renderNotice();

  return () => {
    controller.abort();
    unsubscribe();
    root.remove();
  };
}

export default { render };
