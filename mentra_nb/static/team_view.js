// Built from js/ by `npm run build` (esbuild): edit the source there.

// dom.js
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
}
function toolLabel(name) {
  if (!name.startsWith("mcp__")) return name;
  const rest = name.slice("mcp__".length);
  const cut = rest.indexOf("__");
  if (cut <= 0 || cut + 2 >= rest.length) return name;
  return `${rest.slice(cut + 2)} \xB7 MCP ${rest.slice(0, cut)}`;
}
function approvalBox(call, onAnswer, signal) {
  const box = element("div", "mentra-approval");
  box.dataset.id = call.id;
  box.append(element("div", "mentra-name", call.title), element("pre", "", call.input));
  const approve = (
    /** @type {HTMLButtonElement} */
    element("button", "mentra-approve", "Approve")
  );
  const always = (
    /** @type {HTMLButtonElement} */
    element("button", "mentra-always", "Always allow")
  );
  always.title = call.alwaysTitle;
  const reason = (
    /** @type {HTMLInputElement} */
    element("input", "mentra-reason")
  );
  reason.placeholder = "reason for the model (optional)";
  const deny = (
    /** @type {HTMLButtonElement} */
    element("button", "mentra-deny", "Deny")
  );
  const answer = (approved, alwaysAllow) => {
    for (const control of [approve, always, deny, reason]) control.disabled = true;
    onAnswer({ approve: approved, always: alwaysAllow, reason: approved ? "" : reason.value.trim() });
  };
  approve.addEventListener("click", () => answer(true, false), { signal });
  always.addEventListener("click", () => answer(true, true), { signal });
  deny.addEventListener("click", () => answer(false, false), { signal });
  reason.addEventListener("keydown", (event) => {
    if (event.key === "Enter") deny.click();
  }, { signal });
  const controls = element("div", "mentra-controls");
  controls.append(approve, always, reason, deny);
  box.append(controls);
  return box;
}
function subscribe(model, subscriptions) {
  for (const [event, handler] of subscriptions) model.on(event, handler);
  return () => {
    for (const [event, handler] of subscriptions) model.off(event, handler);
  };
}

// team_view.js
var STATUS_TO_BADGE = { working: "streaming", idle: "finished", failed: "failed", shutdown: "idle" };
function ago(seconds, now = Date.now() / 1e3) {
  if (!seconds) return "";
  const delta = Math.max(0, Math.round(now - seconds));
  if (delta < 60) return `${delta} s ago`;
  if (delta < 3600) return `${Math.round(delta / 60)} min ago`;
  return `${Math.round(delta / 3600)} h ago`;
}
function render({ model, el }) {
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
      element("span", "mentra-usage", `${lead.unread ?? 0} unread`)
    );
  };
  const renderMembers = () => {
    members.replaceChildren();
    const list = model.get("members") ?? [];
    if (!list.length) members.append(element("li", "mentra-empty", "no teammates yet"));
    const waiting = model.get("approvals") ?? [];
    for (const m of list) {
      const row = element("li");
      row.dataset.name = m.name;
      const badge = element("span", "mentra-badge", m.status === "failed" ? `failed: ${m.error ?? ""}` : m.status);
      badge.dataset.status = STATUS_TO_BADGE[
        /** @type {keyof typeof STATUS_TO_BADGE} */
        m.status
      ] ?? m.status;
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
        element("span", "mentra-run", ago(m.last_active))
      );
      members.append(row);
    }
  };
  const renderRequests = () => {
    requests.replaceChildren();
    const list = model.get("requests") ?? [];
    for (const r of list) {
      const box = element("div", "mentra-request");
      box.dataset.id = r.id;
      box.append(element("div", "mentra-name", `${r.protocol} from ${r.sender}`), element("pre", "", r.content));
      const approve = element("button", "mentra-approve", "Approve");
      const reason = (
        /** @type {HTMLInputElement} */
        element("input", "mentra-reason")
      );
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
  const renderApprovals = () => {
    approvals.replaceChildren();
    const list = model.get("approvals") ?? [];
    for (const a of list) {
      const call = {
        id: a.id,
        title: `${a.agent} wants to run ${toolLabel(a.name)}`,
        input: a.input,
        alwaysTitle: `Run this call, and let ${a.agent} call ${a.name} without asking from now on`
      };
      approvals.append(approvalBox(call, ({ approve, always, reason }) => model.send(approve ? { kind: "approve_call", agent: a.agent, call_id: a.id, always } : { kind: "deny_call", agent: a.agent, call_id: a.id, reason }), signal));
    }
  };
  const renderNotice = () => {
    notice.textContent = model.get("notice") ?? "";
  };
  const subscriptions = [
    ["change:lead", renderHeader],
    ["change:members", renderMembers],
    ["change:requests", renderRequests],
    ["change:notice", renderNotice],
    ["change:approvals", () => {
      renderApprovals();
      renderMembers();
    }]
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
var team_view_default = { render };
export {
  ago,
  team_view_default as default,
  render
};
