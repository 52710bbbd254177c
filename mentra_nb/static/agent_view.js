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

// time_travel.js
var Sources = class {
  /** @param {(request: Request) => void} send */
  constructor(send) {
    this.send = send;
    this.waiting = /* @__PURE__ */ new Map();
  }
  /**
   * @param {number} index
   * @returns {Promise<string>}
   */
  request(index) {
    return new Promise((resolve) => {
      const queue = this.waiting.get(index) ?? [];
      queue.push(resolve);
      this.waiting.set(index, queue);
      if (queue.length === 1) this.send({ kind: "edit_source", index });
    });
  }
  /** @param {Source} message the kernel's answer */
  receive(message) {
    const queue = this.waiting.get(message.index) ?? [];
    this.waiting.delete(message.index);
    for (const resolve of queue) resolve(message.text ?? "");
  }
};
function forkOriginLabel(origin) {
  if (!origin || !origin.parent) return "";
  return `fork of ${origin.parent} at message ${origin.at ?? 0}`;
}
function forkPoint(items, index) {
  const answered = items.some((i) => i.index === index + 1 && i.kind === "tool_result");
  return answered ? index + 2 : index + 1;
}
function addMessageActions(container, items, { agentName, send, sources, editable, signal }) {
  for (const row of container.querySelectorAll(":scope > .mentra-message-actions")) row.remove();
  const lastBlock = /* @__PURE__ */ new Map();
  for (const node of container.children) {
    const index = (
      /** @type {HTMLElement} */
      node.dataset.index
    );
    if (index !== void 0) lastBlock.set(Number(index), node);
  }
  for (const [index, node] of lastBlock) {
    const own = items.some((i) => i.index === index && i.role === "user" && i.kind === "text");
    const row = element("div", "mentra-message-actions");
    row.dataset.index = String(index);
    const at = forkPoint(items, index);
    const fork = button2(
      "mentra-fork",
      "Fork from here",
      `A new agent with messages 0\u2013${at - 1} of ${agentName}; ${agentName} is unchanged`
    );
    fork.addEventListener("click", () => openForkForm(row, agentName, at, send, signal), { signal });
    row.append(fork);
    if (own) {
      const edit = button2(
        "mentra-edit",
        "Edit",
        "Send new words in place of this message; the old branch is kept"
      );
      edit.disabled = !editable;
      edit.addEventListener("click", () => openEditForm(row, index, sources, send, signal), { signal });
      row.append(edit);
    }
    node.after(row);
  }
}
function setEditable(container, editable) {
  for (const edit of container.querySelectorAll(".mentra-message-actions .mentra-edit")) {
    edit.disabled = !editable;
  }
}
function openForkForm(row, agentName, at, send, signal) {
  const form = inlineForm(row);
  const name = (
    /** @type {HTMLInputElement} */
    element("input", "mentra-fork-name")
  );
  name.value = `${agentName}-fork-${at}`;
  name.setAttribute("aria-label", "name of the new agent");
  const submit = () => {
    const chosen = name.value.trim();
    if (!chosen) return;
    send({ kind: "fork", at, name: chosen });
    closeForm(form);
  };
  const confirm = button2("mentra-fork-confirm", "Fork", `Fork the first ${at} messages`);
  confirm.addEventListener("click", submit, { signal });
  name.addEventListener("keydown", (event) => {
    if (event.key === "Enter") submit();
  }, { signal });
  form.append(element("span", "", "new agent:"), name, confirm, cancelButton(form, signal));
  name.focus();
}
function openEditForm(row, index, sources, send, signal) {
  const form = inlineForm(row);
  const text = (
    /** @type {HTMLTextAreaElement} */
    element("textarea", "mentra-edit-text")
  );
  text.disabled = true;
  text.placeholder = "loading the message\u2026";
  const submit = () => {
    const edited = text.value.trim();
    if (!edited || text.disabled) return;
    send({ kind: "edit", index, text: edited });
    closeForm(form);
  };
  const confirm = button2(
    "mentra-edit-confirm",
    "Send in its place",
    "Rewind to before this message and send the new words; the old branch is kept"
  );
  confirm.addEventListener("click", submit, { signal });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) submit();
  }, { signal });
  form.append(text, confirm, cancelButton(form, signal));
  sources.request(index).then((words) => {
    if (signal.aborted) return;
    text.value = words;
    text.disabled = false;
    text.focus();
  });
}
function inlineForm(row) {
  row.querySelector(".mentra-inline-form")?.remove();
  const form = element("div", "mentra-inline-form");
  row.append(form);
  row.classList.add("mentra-open");
  return form;
}
function closeForm(form) {
  form.parentElement?.classList.remove("mentra-open");
  form.remove();
}
function cancelButton(form, signal) {
  const cancel = button2("mentra-cancel", "Cancel", "");
  cancel.addEventListener("click", () => closeForm(form), { signal });
  return cancel;
}
function button2(className, label, title) {
  const node = button(className, label, "minimal");
  if (title) node.title = title;
  return node;
}

// saved_state.js
var STATE_MIME = "application/vnd.jupyter.widget-state+json";
var VIEW_MIME = "application/vnd.jupyter.widget-view+json";
var PLACEHOLDER_ESM = "// mentra-nb: this view was live in a kernel; the markdown above it is its saved form\nexport default { render() {} };\n";
function isOurs(saved) {
  const state = saved?.state ?? {};
  return saved?.model_module === "anywidget" && (state._esm === PLACEHOLDER_ESM || typeof state.agent_name === "string" && "scope" in state);
}
function placeholderMetadata(metadata, live, shown) {
  const saved = metadata?.[STATE_MIME] ?? {};
  const state = {};
  let changed = false;
  for (const [id, model] of Object.entries(saved.state ?? {})) {
    if (isOurs(model) && !shown.has(id)) changed = true;
    else state[id] = model;
  }
  for (const [id, model] of Object.entries(live.state ?? {})) {
    if (!isOurs(model) || !shown.has(id)) continue;
    const s = model.state;
    state[id] = {
      model_name: model.model_name,
      model_module: model.model_module,
      model_module_version: model.model_module_version,
      state: {
        _model_name: s._model_name,
        _model_module: s._model_module,
        _model_module_version: s._model_module_version,
        _view_name: s._view_name,
        _view_module: s._view_module,
        _view_module_version: s._view_module_version,
        _esm: PLACEHOLDER_ESM,
        _css: ""
      }
    };
    changed = true;
  }
  if (!changed) return null;
  return { ...metadata ?? {}, [STATE_MIME]: {
    version_major: saved.version_major ?? live.version_major ?? 2,
    version_minor: saved.version_minor ?? live.version_minor ?? 0,
    state
  } };
}
var hooked = /* @__PURE__ */ new WeakSet();
function placeholdersOnSave(manager) {
  const context = manager?.context;
  if (!manager || !context?.saveState?.connect || typeof context.model?.setMetadata !== "function" || hooked.has(context)) return;
  hooked.add(context);
  context.saveState.connect((_sender, state) => {
    if (state !== "started") return;
    try {
      const notebook = context.model;
      const metadata = placeholderMetadata(
        notebook.getMetadata("widgets"),
        manager.get_state_sync({ drop_defaults: true }),
        shownModels(notebook)
      );
      if (metadata) notebook.setMetadata("widgets", metadata);
    } catch (error) {
      console.warn("mentra-nb: could not save placeholders for the live views", error);
    }
  });
}
function shownModels(notebook) {
  const ids = /* @__PURE__ */ new Set();
  for (const cell of notebook.cells) {
    const outputs = cell.outputs;
    for (let i = 0; outputs && i < outputs.length; i++) {
      const id = outputs.get(i).data?.[VIEW_MIME]?.model_id;
      if (id) ids.add(id);
    }
  }
  return ids;
}

// agent_view.js
var RUNNING = /* @__PURE__ */ new Set(["awaiting_model", "streaming", "executing_tool"]);
function statusLabel(status, progress = "") {
  if (!status || !status.name) return "idle";
  if (status.name === "executing_tool") {
    const running = `running ${toolLabel(status.tool_name ?? "tool")}`;
    return progress ? `${running}: ${progress}` : running;
  }
  if (status.name === "failed") return `failed: ${status.error ?? ""}`;
  return status.name.replace("_", " ");
}
function badgeLabel(status, approvals, progress = "") {
  if (approvals && approvals.length) {
    const names = [...new Set(approvals.map((a) => toolLabel(a.name)))].join(", ");
    return `waiting for approval: ${names}`;
  }
  return statusLabel(status, progress);
}
function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
var MAX_REVEAL_MS = 4100;
var Reveal = class {
  /** @param {HTMLElement} el */
  constructor(el) {
    this.node = document.createTextNode("");
    el.replaceChildren(this.node);
    this.target = "";
    this.from = 0;
    this.start = 0;
    this.span = 0;
    this.lastBatch = 0;
    this.frame = 0;
  }
  /** @param {string} text the whole live text now */
  set(text) {
    if (text === this.target) return;
    const now = performance.now();
    const extends_ = this.target !== "" && text.startsWith(this.target);
    const since = now - this.lastBatch;
    this.lastBatch = now;
    this.target = text;
    if (!extends_ || typeof requestAnimationFrame !== "function") {
      this.stop();
      this.node.data = text;
      return;
    }
    this.from = this.node.data.length;
    this.start = now;
    this.span = Math.min(MAX_REVEAL_MS, Math.max(50, since));
    if (!this.frame) this.frame = requestAnimationFrame(this.step);
  }
  /** @param {number} now */
  step = (now) => {
    this.frame = 0;
    const done = Math.min(1, (now - this.start) / this.span);
    const length = this.from + Math.round((this.target.length - this.from) * done);
    if (length > this.node.data.length) this.node.appendData(this.target.slice(this.node.data.length, length));
    if (this.node.data.length < this.target.length) this.frame = requestAnimationFrame(this.step);
  };
  stop() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
  }
};
function resolveHtml(parts, sources) {
  return parts.map((part) => {
    if (typeof part === "string") return part;
    const [source, start, end] = part;
    return escapeHtml((sources[source] ?? "").slice(start, end));
  }).join("");
}
var LiveStream = class {
  constructor() {
    this.seq = -1;
    this.text = "";
    this.thinking = "";
    this.tools = {};
    this.items = [];
    this.changedFrom = 0;
  }
  /**
   * @param {StreamMessage} message
   * @returns {"live"|"items"|"resync"|""} what changed: the live stream, the
   *   transcript (from index `changedFrom`), or nothing, or "resync" when this
   *   view missed text a message refers to and must ask for everything again
   */
  apply(message) {
    if (!message || typeof message.seq !== "number" || message.seq <= this.seq) return "";
    if (!["delta", "reset", "items"].includes(message.kind)) return "";
    this.seq = message.seq;
    if (message.kind === "items") return this.applyItems(message);
    if (message.kind === "reset") {
      this.text = message.text ?? "";
      this.thinking = message.thinking ?? "";
      this.tools = { ...message.tools ?? {} };
    } else {
      this.text += message.text ?? "";
      this.thinking += message.thinking ?? "";
      for (const [id, piece] of Object.entries(message.tools ?? {})) {
        this.tools[id] = (this.tools[id] ?? "") + piece;
      }
    }
    return "live";
  }
  /**
   * New transcript items from index `start`. With `tail`, they end a streamed
   * reply: the tail completes the stream, its spans resolve against it, and the
   * live stream is cleared. With `live` (a hello's answer), the live stream is
   * replaced by it.
   * @param {StreamMessage} message
   */
  applyItems(message) {
    const start = message.start ?? 0;
    const [textTail, thinkingTail] = message.tail ?? ["", ""];
    const sources = [this.text + textTail, this.thinking + thinkingTail];
    const basis = message.basis;
    if (start > this.items.length || basis && (basis[0] !== sources[0].length || basis[1] !== sources[1].length)) {
      return "resync";
    }
    const items = (message.items ?? []).map(({ html_parts, ...item }) => html_parts ? { ...item, html: resolveHtml(html_parts, sources) } : item);
    this.changedFrom = start;
    this.items = [...this.items.slice(0, start), ...items];
    if (message.tail) {
      this.text = "";
      this.thinking = "";
      this.tools = {};
    }
    if (message.live) {
      this.text = message.live.text ?? "";
      this.thinking = message.live.thinking ?? "";
      this.tools = { ...message.live.tools ?? {} };
    }
    return "items";
  }
};
var ModelStream = class {
  constructor() {
    this.live = new LiveStream();
    this.views = /* @__PURE__ */ new Set();
    this.receive = (message) => {
      const changed = this.live.apply(message);
      for (const view of this.views) view(changed, message);
    };
  }
};
var modelStreams = /* @__PURE__ */ new WeakMap();
function initialize({ model }) {
  placeholdersOnSave(
    /** @type {any} */
    model.widget_manager
  );
  const stream = new ModelStream();
  modelStreams.set(model, stream);
  model.on("msg:custom", stream.receive);
  return () => {
    model.off("msg:custom", stream.receive);
    modelStreams.delete(model);
  };
}
function holdsApprovals(root, name) {
  const views = [...document.querySelectorAll(".mentra-agent[data-mentra-agent]")].filter((view) => (
    /** @type {HTMLElement} */
    view.dataset.mentraAgent === name
  ));
  return !root.isConnected || views.length === 0 || views[views.length - 1] === root;
}
function fullView(name, except) {
  return (
    /** @type {HTMLElement[]} */
    [...document.querySelectorAll('.mentra-agent[data-mentra-scope="full"]')].find((view) => view !== except && view.dataset.mentraAgent === name)
  );
}
var VIEWS_CHANGED = "mentra-agent-views";
function render({ model, el }) {
  const root = element("div", "mentra-agent");
  const header = element("div", "mentra-header");
  const name = element("span", "mentra-name");
  const modelName = element("span", "mentra-model");
  const badge = element("span", "mentra-badge");
  const run = element("span", "mentra-run");
  const usage = element("span", "mentra-usage");
  const scopeLink = button("mentra-full-link", "full conversation", "minimal");
  scopeLink.title = "This cell shows one turn; go to the view of the whole conversation";
  const notice = element("span", "mentra-notice-item mentra-header-notice");
  const forkOrigin = element("span", "mentra-fork-origin");
  header.append(name, modelName, badge, run, usage, forkOrigin, scopeLink, notice);
  const scroll = element("div", "mentra-scroll");
  const transcript = element("div", "mentra-transcript");
  const liveThinking = element("div", "mentra-live mentra-thinking");
  const liveText = element("div", "mentra-live");
  const reveal = new Reveal(liveText);
  const liveTools = element("div", "mentra-live-tools");
  scroll.append(transcript, liveThinking, liveText, liveTools);
  const approvalsBox = element("div", "mentra-approvals");
  const resumeBox = element("div", "mentra-resumable");
  const travelNotice = element("div", "mentra-time-travel-notice");
  const controls = element("div", "mentra-controls");
  const input = (
    /** @type {HTMLTextAreaElement} */
    element("textarea", "jp-mod-styled")
  );
  input.placeholder = "Message the agent (Ctrl+Enter sends)";
  const sendButton = button("mentra-send", "Send", "accept");
  const stopButton = button("mentra-stop", "Stop", "warn");
  stopButton.title = "Stop now: end the reply where it is, keep it (marked as cut) and end the run";
  const finishButton = button("mentra-finish", "Finish round", "reject");
  finishButton.title = "Finish after the current round (its tool calls run), keeping the work";
  const interruptButton = button("mentra-interrupt", "Interrupt", "warn");
  interruptButton.title = "Abort now; the turn is rolled back and can be resumed";
  controls.append(input, sendButton, stopButton, finishButton, interruptButton);
  root.append(header, scroll, approvalsBox, resumeBox, travelNotice, controls);
  el.append(root);
  const shared = modelStreams.get(model);
  const stream = shared ?? new ModelStream();
  const live = stream.live;
  const sources = new Sources((request) => model.send(request));
  const watcher = new ClampWatcher();
  let stopClicked = "";
  let connected = true;
  let following = true;
  const follow = () => {
    if (following) scroll.scrollTop = scroll.scrollHeight;
  };
  const renderScope = () => {
    const scope = model.get("scope") ?? {};
    root.dataset.mentraAgent = model.get("agent_name") ?? "";
    root.dataset.mentraScope = scope.kind === "turn" ? "turn" : "full";
    scopeLink.hidden = scope.kind !== "turn";
  };
  const renderHeader = () => {
    renderScope();
    name.textContent = model.get("agent_name");
    modelName.textContent = model.get("model_key");
    const status = model.get("status") ?? { name: "idle" };
    const approvals = model.get("approvals") ?? [];
    const running = RUNNING.has(status.name);
    if (!running) stopClicked = "";
    const stopping = running ? status.stopping || stopClicked : "";
    if (!connected) return;
    badge.textContent = stopping ? "stopping\u2026" : badgeLabel(status, approvals, model.get("progress") ?? "");
    badge.dataset.status = stopping ? "stopping" : approvals.length ? "waiting" : status.name;
    root.dataset.stopping = stopping || "";
    run.textContent = `run ${model.get("run_generation") ?? 0}`;
    const u = model.get("usage") ?? {};
    const cost = model.get("cost");
    usage.textContent = `${u.input_tokens ?? 0} in / ${u.output_tokens ?? 0} out tokens` + (cost ? ` \xB7 ${cost}` : "");
    stopButton.disabled = !running || stopping === "now";
    finishButton.disabled = !running || Boolean(stopping);
    interruptButton.disabled = !running;
    sendButton.disabled = running;
    forkOrigin.textContent = forkOriginLabel(model.get("fork_origin"));
    setEditable(transcript, !running && connected);
  };
  let calls = /* @__PURE__ */ new Map();
  let renderedItems = 0;
  const renderItems = () => {
    const from = live.changedFrom;
    if (from !== renderedItems) {
      watcher.clear();
      transcript.replaceChildren();
      calls = /* @__PURE__ */ new Map();
      appendTranscript(transcript, live.items, calls, watcher);
    } else {
      appendTranscript(transcript, live.items.slice(from), calls, watcher);
    }
    renderedItems = live.items.length;
    const running = RUNNING.has((model.get("status") ?? {}).name);
    addMessageActions(transcript, live.items, {
      agentName: model.get("agent_name"),
      send: (request) => model.send(request),
      sources,
      editable: !running && connected,
      signal
    });
    follow();
  };
  const renderLive = () => {
    reveal.set(live.text);
    liveThinking.textContent = live.thinking;
    liveTools.replaceChildren();
    const pending = model.get("pending_tools") ?? [];
    const ids = /* @__PURE__ */ new Set([...pending.map((p) => p.id), ...Object.keys(live.tools)]);
    for (const id of ids) {
      if (calls.has(id)) continue;
      const known = pending.find((p) => p.id === id);
      const box = element("div", "mentra-live-tool");
      box.append(element("span", "", `tool call: ${known?.name ?? id}`));
      box.append(element("pre", "", live.tools[id] ?? known?.input_json ?? ""));
      liveTools.append(box);
    }
    follow();
  };
  let shownApprovals = "";
  const renderApprovals = () => {
    const approvals = connected ? model.get("approvals") ?? [] : [];
    const holder = holdsApprovals(root, model.get("agent_name") ?? "");
    const key = JSON.stringify([holder, approvals]);
    if (key === shownApprovals) return;
    shownApprovals = key;
    approvalsBox.replaceChildren();
    if (!approvals.length) return;
    if (!holder) {
      const names = [...new Set(approvals.map((a) => toolLabel(a.name)))].join(", ");
      approvalsBox.append(element(
        "div",
        "mentra-notice-item",
        `${names} waits for your approval in the newest view of this agent, below`
      ));
      return;
    }
    for (const a of approvals) {
      const call = {
        id: a.id,
        title: `${toolLabel(a.name)} wants to run`,
        input: a.input,
        alwaysTitle: `Run this call, and let this agent call ${a.name} without asking from now on`
      };
      approvalsBox.append(approvalBox(call, ({ approve, always, reason }) => model.send(approve ? { kind: "approve", call_id: a.id, always } : { kind: "deny", call_id: a.id, reason }), signal));
    }
  };
  let helloPending = false;
  const hello = () => {
    helloPending = true;
    model.send({ kind: "hello" });
  };
  const markLive = () => {
    root.dataset.mentraLive = String(live.seq >= 0);
  };
  const onStream = (changed, message) => {
    markLive();
    const other = (
      /** @type {{kind?: string}} */
      message
    );
    if (other?.kind === "source") {
      sources.receive(
        /** @type {import("./time_travel.js").Source} */
        other
      );
      return;
    }
    if (changed === "live") renderLive();
    if (changed === "items") {
      if (message.start === 0 && !message.basis) helloPending = false;
      renderItems();
      renderLive();
    }
    if (changed === "resync" && !helloPending) hello();
  };
  const send = () => {
    const text = input.value.trim();
    if (!text) return;
    model.send({ kind: "send", text });
    input.value = "";
  };
  const controller = new AbortController();
  const { signal } = controller;
  sendButton.addEventListener("click", send, { signal });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) send();
  }, { signal });
  const stop = (how) => {
    stopClicked = how;
    renderHeader();
    model.send({ kind: "stop", now: how === "now" });
  };
  stopButton.addEventListener("click", () => stop("now"), { signal });
  finishButton.addEventListener("click", () => stop("round"), { signal });
  interruptButton.addEventListener("click", () => model.send({ kind: "interrupt" }), { signal });
  scroll.addEventListener("scroll", () => {
    following = scroll.scrollHeight - scroll.scrollTop - scroll.clientHeight < 24;
  }, { signal, passive: true });
  scopeLink.addEventListener("click", () => {
    const agent = model.get("agent_name") ?? "";
    const full = fullView(agent, root);
    if (full) {
      full.scrollIntoView({ behavior: "smooth", block: "start" });
      full.classList.add("mentra-highlight");
      document.addEventListener(
        "pointerdown",
        () => full.classList.remove("mentra-highlight"),
        { once: true, capture: true }
      );
      notice.textContent = "";
    } else {
      notice.textContent = `no full view of ${agent} in this notebook: run %mentra show ${agent}`;
    }
  }, { signal });
  const renderResumable = () => {
    resumeBox.replaceChildren();
    const resumable = model.get("resumable") ?? {};
    if (!resumable.kind || !connected) return;
    const label = resumable.kind === "replay" ? `This turn was cut and rolled back: \u201C${resumable.text ?? ""}\u201D` : "Tool calls were cut before they finished.";
    const resume = button("mentra-resume", resumable.kind === "replay" ? "Replay it" : "Continue", "accept");
    resume.addEventListener("click", () => model.send({ kind: "resume" }), { signal });
    resumeBox.append(element("span", "mentra-notice-item", label), resume);
  };
  const onDisconnect = () => {
    if (!connected) return;
    connected = false;
    root.dataset.connected = "false";
    for (const node of root.querySelectorAll("button")) node.disabled = true;
    input.disabled = true;
    badge.textContent = "disconnected";
    badge.dataset.status = "idle";
    reveal.set("");
    liveThinking.textContent = "";
    renderApprovals();
    notice.textContent = "its kernel stopped: run %mentra resume in the new kernel for a live view";
  };
  const renderNotice = () => {
    travelNotice.textContent = model.get("notice") ?? "";
  };
  const onViewsChanged = (event) => {
    if (
      /** @type {CustomEvent} */
      event.detail === model.get("agent_name")
    ) renderApprovals();
  };
  const announce = () => document.dispatchEvent(new CustomEvent(VIEWS_CHANGED, { detail: model.get("agent_name") }));
  document.addEventListener(VIEWS_CHANGED, onViewsChanged, { signal });
  const unsubscribe = subscribe(model, [
    ["comm_live_update", onDisconnect],
    ...["agent_name", "model_key", "status", "run_generation", "usage", "cost", "progress", "scope"].map(
      (trait) => (
        /** @type {[string, () => void]} */
        [`change:${trait}`, renderHeader]
      )
    ),
    ["change:pending_tools", renderLive],
    ["change:approvals", () => {
      renderApprovals();
      renderHeader();
    }],
    ["change:resumable", renderResumable],
    ["change:fork_origin", renderHeader],
    ["change:notice", renderNotice],
    ...shared ? [] : [
      /** @type {[string, (m: StreamMessage) => void]} */
      ["msg:custom", stream.receive]
    ]
  ]);
  stream.views.add(onStream);
  markLive();
  renderHeader();
  renderItems();
  renderLive();
  renderApprovals();
  renderResumable();
  renderNotice();
  if (live.seq < 0) hello();
  const attached = requestAnimationFrame(announce);
  const visibility = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver(announce);
  visibility?.observe(root);
  return () => {
    cancelAnimationFrame(attached);
    reveal.stop();
    visibility?.disconnect();
    controller.abort();
    unsubscribe();
    stream.views.delete(onStream);
    watcher.clear();
    root.remove();
    announce();
  };
}
var agent_view_default = { initialize, render };
export {
  LiveStream,
  Reveal,
  badgeLabel,
  agent_view_default as default,
  fullView,
  holdsApprovals,
  initialize,
  resolveHtml,
  statusLabel
};
