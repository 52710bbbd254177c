// Built from js/ by `npm run build` (esbuild): edit the source there.

// dom.js
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
}
function button(className, text, tone) {
  const classes = tone === "minimal" ? "jp-Button jp-mod-minimal jp-mod-small" : `jp-Button jp-mod-styled jp-mod-${tone}`;
  const node = (
    /** @type {HTMLButtonElement} */
    element("button", `${classes} ${className}`, text)
  );
  node.type = "button";
  return node;
}
function renderTranscript(container, items, watcher = null) {
  watcher?.clear();
  container.replaceChildren();
  appendTranscript(container, items, /* @__PURE__ */ new Map(), watcher);
}
function appendTranscript(container, items, calls, watcher = null) {
  for (const item of items) {
    if (item.kind === "tool_result") {
      const result = element("pre", item.is_error ? "mentra-error" : "", item.content ?? "");
      const host = item.id ? calls.get(item.id) : void 0;
      const cut = item.truncated ? element("div", "mentra-notice-item", "\u2026 the first 4,000 characters of the result (agent.history has all of it)") : null;
      if (host) {
        host.append(result);
        if (cut) host.append(cut);
        if (item.is_error) host.classList.add("mentra-error");
      } else {
        const orphan = element("div", "mentra-item mentra-tool");
        orphan.dataset.role = item.role;
        orphan.dataset.index = String(item.index);
        orphan.append(result);
        if (cut) orphan.append(cut);
        container.append(orphan);
      }
      continue;
    }
    const node = element("div", "mentra-item");
    node.dataset.role = item.role;
    node.dataset.index = String(item.index);
    node.dataset.kind = item.kind;
    if (item.kind === "text" || item.kind === "notice") {
      const body = element("div", "mentra-body");
      body.innerHTML = item.html ?? "";
      addCodeTools(body);
      node.append(body);
      if (item.kind === "notice") node.classList.add("mentra-notice-item");
      if (item.kind === "text") {
        clamp(body, item.role === "user" ? "prompt" : "message");
        watcher?.watch(body);
      }
    } else if (item.kind === "thinking") {
      const fold = element("details", "mentra-thinking");
      fold.append(element("summary", "", "thinking"));
      const body = element("div", "mentra-body");
      body.innerHTML = item.html ?? "";
      addCodeTools(body);
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
      node.append(img);
    }
    if (item.truncated && (item.kind === "text" || item.kind === "thinking")) {
      node.dataset.truncated = "true";
      node.append(element("div", "mentra-truncated", "stopped here: the rest of this reply was not generated"));
    }
    container.append(node);
  }
}
function clamp(body, size) {
  body.classList.add("mentra-clamp");
  body.dataset.clamp = size;
}
function measureClamped(body) {
  const node = body.parentElement;
  if (!node || node.querySelector(":scope > .mentra-more") || !(body.scrollHeight > body.clientHeight + 1)) return;
  const toggle = button("mentra-more", "Show more", "minimal");
  toggle.setAttribute("aria-expanded", "false");
  toggle.addEventListener("click", () => {
    const open = node.classList.toggle("mentra-expanded");
    toggle.textContent = open ? "Show less" : "Show more";
    toggle.setAttribute("aria-expanded", String(open));
  });
  body.after(toggle);
}
var ClampWatcher = class {
  constructor() {
    this.observer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
      for (const entry of entries) measureClamped(entry.target);
    });
  }
  /** @param {Element} body a clamped message body */
  watch(body) {
    this.observer?.observe(body);
  }
  /** Stop watching everything (before a re-render, and when the view closes). */
  clear() {
    this.observer?.disconnect();
  }
};
function addCodeTools(body) {
  for (const pre of body.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    if (!code) continue;
    highlightCode(code);
    const source = () => (code.textContent ?? "").replace(/\n$/, "");
    const bar = element("div", "mentra-code-tools");
    const copy = button("mentra-copy", "Copy", "minimal");
    copy.title = "Copy this code";
    copy.addEventListener("click", () => {
      copyText(source()).then(
        () => flash(copy, "Copied"),
        () => flash(copy, "Copy failed")
      );
    });
    const insert = button("mentra-insert", "Insert as cell", "minimal");
    insert.title = "Insert this code as a new cell below the one that shows it";
    insert.addEventListener("click", () => {
      if (insertCell(insert, source())) {
        flash(insert, "Inserted");
      } else {
        copyText(source()).then(
          () => flash(insert, "No notebook here: copied"),
          () => flash(insert, "No notebook here")
        );
      }
    });
    bar.append(copy, insert);
    const frame = element("div", "mentra-code");
    pre.replaceWith(frame);
    frame.append(bar, pre);
  }
}
var TOKEN = /^(?:([a-z][a-z0-9]{0,3}):)?(\d+)$/;
function highlightCode(code) {
  const map = code.dataset.hl;
  code.removeAttribute("data-hl");
  if (!map) return;
  const text = code.textContent ?? "";
  const pieces = [];
  let at = 0;
  for (const entry of map.split(" ")) {
    const match = TOKEN.exec(entry);
    if (!match) return;
    const end = at + Number(match[2]);
    pieces.push(match[1] ? element("span", match[1], text.slice(at, end)) : document.createTextNode(text.slice(at, end)));
    at = end;
  }
  if (at !== text.length) return;
  code.replaceChildren(...pieces);
}
function flash(node, text) {
  const label = node.dataset.label ?? node.textContent ?? "";
  node.dataset.label = label;
  node.textContent = text;
  setTimeout(() => {
    node.textContent = label;
  }, 1500);
}
async function copyText(text) {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return;
    } catch {
    }
  }
  const area = (
    /** @type {HTMLTextAreaElement} */
    element("textarea")
  );
  area.value = text;
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  if (!copied) throw new Error("the browser refused to copy");
}
function insertCell(from, source) {
  const cell = from.closest(".jp-Cell");
  const notebook = cell?.closest(".jp-Notebook");
  if (!cell || !notebook) return false;
  let next = cell.nextElementSibling;
  while (next && !next.classList.contains("jp-Cell")) next = next.nextElementSibling;
  const target = next ?? notebook;
  const cells = [{ cell_type: "code", source, metadata: {}, outputs: [], execution_count: null }];
  const mime = "application/vnd.jupyter.cells";
  const drop = new Event("lm-drop", { bubbles: true, cancelable: true });
  Object.assign(drop, {
    mimeData: { hasData: (type) => type === mime, getData: () => cells, types: () => [mime] },
    proposedAction: "copy",
    supportedActions: "copy",
    dropAction: "none",
    source: null,
    clientX: 0,
    clientY: 0
  });
  next?.classList.add("jp-mod-dropTarget");
  target.dispatchEvent(drop);
  next?.classList.remove("jp-mod-dropTarget");
  return true;
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
  const approve = button("mentra-approve", "Approve", "accept");
  const always = button("mentra-always", "Always allow", "reject");
  always.title = call.alwaysTitle;
  const reason = (
    /** @type {HTMLInputElement} */
    element("input", "jp-mod-styled mentra-reason")
  );
  reason.placeholder = "reason for the model (optional)";
  const deny = button("mentra-deny", "Deny", "warn");
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
function holdsAnswers(root, lead) {
  const views = [...document.querySelectorAll(".mentra-team[data-mentra-team]")].filter((view) => (
    /** @type {HTMLElement} */
    view.dataset.mentraTeam === lead
  ));
  return !root.isConnected || views.length === 0 || views[views.length - 1] === root;
}
var VIEWS_CHANGED = "mentra-team-views";
function render({ model, el }) {
  const root = element("div", "mentra-team");
  const header = element("div", "mentra-header");
  const members = element("ul", "mentra-list mentra-members");
  const pointer = element("div", "mentra-notice-item");
  const requests = element("div", "mentra-requests");
  const approvals = element("div", "mentra-approvals");
  const notice = element("div", "mentra-notice mentra-error");
  root.append(header, members, pointer, requests, approvals, notice);
  el.append(root);
  const controller = new AbortController();
  const { signal } = controller;
  const watcher = new ClampWatcher();
  const leadName = () => String((model.get("lead") ?? {}).name ?? "");
  const viewId = globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random()}`;
  let openName = "";
  let pages = 1;
  const previews = /* @__PURE__ */ new Map();
  const previewKey = (name, pageCount) => `${pageCount}/${name}`;
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
      element("span", "mentra-usage", `${lead.unread ?? 0} unread`)
    );
  };
  const previewPanel = (row) => {
    let p;
    for (let n = pages; n >= 1 && !p; n--) p = previews.get(previewKey(openName, n));
    const panel = element("div", "mentra-preview");
    panel.addEventListener("click", (event) => event.stopPropagation(), { signal });
    const head = element("div", "mentra-header");
    head.append(element("span", "mentra-name", `${openName}'s transcript`));
    const close = button("mentra-close", "Close", "minimal");
    close.addEventListener("click", closeTeammate, { signal });
    head.append(close);
    panel.append(head);
    if (!p) {
      panel.append(element("div", "mentra-empty", "loading\u2026"));
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
    const list = model.get("members") ?? [];
    if (!list.length) members.append(element("li", "mentra-empty", "no teammates yet"));
    const waiting = model.get("approvals") ?? [];
    for (const m of list) {
      const row = element("li", "mentra-clickable");
      row.dataset.name = m.name;
      row.title = `Show ${m.name}'s transcript`;
      row.setAttribute("aria-expanded", String(openName === m.name));
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
      row.addEventListener(
        "click",
        () => openName === m.name ? closeTeammate() : openTeammate(m.name),
        { signal }
      );
      row.tabIndex = 0;
      row.addEventListener("keydown", (event) => {
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
    const list = model.get("requests") ?? [];
    for (const r of list) {
      const box = element("div", "mentra-request");
      box.dataset.id = r.id;
      box.append(element("div", "mentra-name", `${r.protocol} from ${r.sender}`), element("pre", "", r.content));
      const approve = button("mentra-approve", "Approve", "accept");
      const reason = (
        /** @type {HTMLInputElement} */
        element("input", "jp-mod-styled mentra-reason")
      );
      reason.placeholder = "reason (needed to reject)";
      const reject = button("mentra-reject", "Reject", "warn");
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
  let shownAnswers = "";
  const renderAnswers = () => {
    const waiting = (model.get("requests") ?? []).length + (model.get("approvals") ?? []).length;
    const holder = holdsAnswers(root, leadName());
    const key = JSON.stringify([holder, model.get("requests") ?? [], model.get("approvals") ?? []]);
    if (key === shownAnswers) return;
    shownAnswers = key;
    pointer.textContent = !holder && waiting ? `${waiting === 1 ? "1 request waits" : `${waiting} requests wait`} for you in the newest view of this team, below` : "";
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
    if (
      /** @type {CustomEvent} */
      event.detail === leadName()
    ) renderAnswers();
  }, { signal });
  const subscriptions = [
    ["change:lead", () => {
      renderHeader();
      renderAnswers();
    }],
    ["change:members", renderMembers],
    ["change:requests", renderAnswers],
    ["change:notice", renderNotice],
    ["change:approvals", () => {
      renderAnswers();
      renderMembers();
    }],
    [
      "msg:custom",
      /** @type {() => void} */
      /** @type {unknown} */
      onMessage
    ]
  ];
  const unsubscribe = subscribe(model, subscriptions);
  renderHeader();
  renderMembers();
  renderAnswers();
  renderNotice();
  const attached = requestAnimationFrame(announce);
  const visibility = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver(announce);
  visibility?.observe(root);
  return () => {
    if (openName) model.send({ kind: "close", view: viewId });
    cancelAnimationFrame(attached);
    visibility?.disconnect();
    controller.abort();
    unsubscribe();
    watcher.clear();
    root.remove();
    announce();
  };
}
var team_view_default = { render };
export {
  ago,
  team_view_default as default,
  holdsAnswers
};
