// Built from js/ by `npm run build` (esbuild): edit the source there.

// dom.js
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
}
function renderTranscript(container, items) {
  container.replaceChildren();
  appendTranscript(container, items, /* @__PURE__ */ new Map());
}
function appendTranscript(container, items, calls) {
  for (const item of items) {
    if (item.kind === "tool_result") {
      const result = element("pre", item.is_error ? "mentra-error" : "", item.content ?? "");
      const host = item.id ? calls.get(item.id) : void 0;
      if (host) {
        host.append(result);
        if (item.is_error) host.classList.add("mentra-error");
      } else {
        const orphan = element("div", "mentra-item mentra-tool");
        orphan.dataset.role = item.role;
        orphan.append(result);
        container.append(orphan);
      }
      continue;
    }
    const node = element("div", "mentra-item");
    node.dataset.role = item.role;
    node.dataset.kind = item.kind;
    if (item.kind === "text" || item.kind === "notice") {
      node.innerHTML = item.html ?? "";
      if (item.kind === "notice") node.classList.add("mentra-notice-item");
    } else if (item.kind === "thinking") {
      const fold = element("details", "mentra-thinking");
      fold.append(element("summary", "", "thinking"));
      const body = element("div");
      body.innerHTML = item.html ?? "";
      fold.append(body);
      node.append(fold);
    } else if (item.kind === "tool_use") {
      const fold = element("details", "mentra-tool");
      fold.append(element("summary", "", `tool call: ${toolLabel(item.name ?? "")}`));
      fold.append(element("pre", "", item.input ?? ""));
      node.append(fold);
      if (item.id) calls.set(item.id, fold);
    } else if (item.kind === "image") {
      const img = (
        /** @type {HTMLImageElement} */
        element("img")
      );
      img.src = `data:${item.media_type};base64,${item.data}`;
      img.style.maxWidth = "100%";
      node.append(img);
    }
    container.append(node);
  }
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

// subagent_picker.js
var ACTIVE = /* @__PURE__ */ new Set(["pending_init", "running"]);
var TONES = { success: "active", error: "error", neutral: "" };
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
  el.append(root);
  const controller = new AbortController();
  const { signal } = controller;
  const renderHeader = () => {
    title.textContent = `${model.get("root_name")} \xB7 subagents`;
    const b = model.get("badge") ?? {};
    badge.textContent = b.text ?? "0";
    badge.dataset.tone = TONES[
      /** @type {keyof typeof TONES} */
      b.tone ?? "neutral"
    ] ?? "";
  };
  const renderList = () => {
    list.replaceChildren();
    const options = model.get("options") ?? [];
    if (!options.length) list.append(element("li", "mentra-empty", "no subagents yet"));
    for (const option of options) {
      const row = element("li", "mentra-clickable");
      row.dataset.path = option.path;
      const status = element("span", "mentra-badge", option.status);
      status.dataset.status = ACTIVE.has(option.status) ? "streaming" : option.status === "completed" ? "finished" : option.status === "errored" ? "failed" : option.status;
      const waiting = option.waiting_for_approval ?? [];
      if (waiting.length) {
        status.textContent = `waiting for approval: ${waiting.map(toolLabel).join(", ")}`;
        status.dataset.status = "waiting";
      }
      row.append(element("span", "mentra-name", option.label), status, element("span", "mentra-model", option.model));
      row.title = option.path;
      row.addEventListener("click", () => model.send({ kind: "open", path: option.path }), { signal });
      if (ACTIVE.has(option.status)) {
        const stop = element("button", "mentra-interrupt", "Interrupt");
        stop.addEventListener("click", (event) => {
          event.stopPropagation();
          model.send({ kind: "interrupt", path: option.path });
        }, { signal });
        row.append(stop);
      }
      list.append(row);
    }
  };
  const renderPreview = () => {
    const p = model.get("preview") ?? {};
    preview.replaceChildren();
    if (!p.path) return;
    const head = element("div", "mentra-header");
    head.append(element("span", "mentra-name", p.path), element("span", "mentra-model", p.model ?? ""));
    const close = element("button", "mentra-close", "Close");
    close.addEventListener("click", () => model.send({ kind: "close" }), { signal });
    head.append(close);
    preview.append(head);
    if (p.has_older) {
      const older = element("button", "mentra-older", "Load older");
      older.addEventListener("click", () => model.send({ kind: "older" }), { signal });
      preview.append(older);
    }
    const transcript = element("div", "mentra-transcript");
    renderTranscript(transcript, p.items ?? []);
    preview.append(transcript);
    if (p.error) preview.append(element("div", "mentra-error", p.error));
  };
  const renderApprovals = () => {
    approvals.replaceChildren();
    const waiting = model.get("approvals") ?? [];
    for (const a of waiting) {
      const name = a.path.slice(a.path.lastIndexOf("/") + 1);
      const call = {
        id: a.ref,
        title: `${name} wants to run ${toolLabel(a.name)}`,
        input: a.input,
        alwaysTitle: `Run this call, and let ${a.path} call ${a.name} without asking from now on`
      };
      const box = approvalBox(call, ({ approve, always, reason }) => model.send(approve ? { kind: "approve_call", path: a.path, call_id: a.ref, always } : { kind: "deny_call", path: a.path, call_id: a.ref, reason }), signal);
      box.dataset.path = a.path;
      approvals.append(box);
    }
  };
  const renderNotice = () => {
    notice.textContent = model.get("notice") ?? "";
  };
  const subscriptions = [
    ["change:root_name", renderHeader],
    ["change:badge", renderHeader],
    ["change:options", renderList],
    ["change:preview", renderPreview],
    ["change:notice", renderNotice],
    ["change:approvals", renderApprovals]
  ];
  const unsubscribe = subscribe(model, subscriptions);
  renderHeader();
  renderList();
  renderApprovals();
  renderPreview();
  renderNotice();
  return () => {
    controller.abort();
    unsubscribe();
    root.remove();
  };
}
var subagent_picker_default = { render };
export {
  subagent_picker_default as default,
  render
};
