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
      const shown = resultImages(item);
      if (host) {
        host.append(result);
        if (cut) host.append(cut);
        if (shown) host.append(shown);
        if (item.is_error) host.classList.add("mentra-error");
      } else {
        const orphan = element("div", "mentra-item mentra-tool");
        orphan.dataset.role = item.role;
        orphan.dataset.index = String(item.index);
        orphan.append(result);
        if (cut) orphan.append(cut);
        if (shown) orphan.append(shown);
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
function resultImages(item) {
  if (!item.images?.length) return null;
  const row = element("div", "mentra-result-images");
  for (const image of item.images) {
    if (!image.media_type.startsWith("image/")) continue;
    const img = (
      /** @type {HTMLImageElement} */
      element("img", "mentra-thumb")
    );
    img.src = `data:${image.media_type};base64,${image.data}`;
    img.alt = "image the tool showed the model";
    img.title = "click to enlarge";
    img.addEventListener("click", () => img.classList.toggle("mentra-thumb-open"));
    row.append(img);
  }
  return row;
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
  const watcher = new ClampWatcher();
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
        const stop = button("mentra-interrupt", "Interrupt", "warn");
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
    preview.append(live);
    renderLive();
    if (p.error) preview.append(element("div", "mentra-error", p.error));
  };
  const live = element("div", "mentra-live");
  const renderLive = () => {
    live.textContent = model.get("preview_live") ?? "";
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
    ["change:approvals", renderApprovals],
    ["change:preview_live", renderLive]
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
var subagent_picker_default = { render };
export {
  subagent_picker_default as default
};
