// Built from js/ by `npm run build` (esbuild): edit the source there.

// dom.js
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
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
   * live stream is cleared.
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
  const stream = new ModelStream();
  modelStreams.set(model, stream);
  model.on("msg:custom", stream.receive);
  return () => {
    model.off("msg:custom", stream.receive);
    modelStreams.delete(model);
  };
}
function render({ model, el }) {
  const root = element("div", "mentra-agent");
  const header = element("div", "mentra-header");
  const name = element("span", "mentra-name");
  const modelName = element("span", "mentra-model");
  const badge = element("span", "mentra-badge");
  const run = element("span", "mentra-run");
  const usage = element("span", "mentra-usage");
  header.append(name, modelName, badge, run, usage);
  const transcript = element("div", "mentra-transcript");
  const liveThinking = element("div", "mentra-live mentra-thinking");
  const liveText = element("div", "mentra-live");
  const liveTools = element("div", "mentra-live-tools");
  const approvalsBox = element("div", "mentra-approvals");
  const resumeBox = element("div", "mentra-resumable");
  const controls = element("div", "mentra-controls");
  const input = (
    /** @type {HTMLTextAreaElement} */
    element("textarea")
  );
  input.placeholder = "Message the agent (Ctrl+Enter sends)";
  const sendButton = (
    /** @type {HTMLButtonElement} */
    element("button", "mentra-send", "Send")
  );
  const stopButton = (
    /** @type {HTMLButtonElement} */
    element("button", "mentra-stop", "Stop")
  );
  stopButton.title = "Finish after the current round, keeping the work";
  const interruptButton = (
    /** @type {HTMLButtonElement} */
    element("button", "mentra-interrupt", "Interrupt")
  );
  interruptButton.title = "Abort now; the turn is rolled back and can be resumed";
  controls.append(input, sendButton, stopButton, interruptButton);
  root.append(header, transcript, liveThinking, liveText, liveTools, approvalsBox, resumeBox, controls);
  el.append(root);
  const shared = modelStreams.get(model);
  const stream = shared ?? new ModelStream();
  const live = stream.live;
  const renderHeader = () => {
    name.textContent = model.get("agent_name");
    modelName.textContent = model.get("model_key");
    const status = model.get("status") ?? { name: "idle" };
    const approvals = model.get("approvals") ?? [];
    badge.textContent = badgeLabel(status, approvals, model.get("progress") ?? "");
    badge.dataset.status = approvals.length ? "waiting" : status.name;
    run.textContent = `run ${model.get("run_generation") ?? 0}`;
    const u = model.get("usage") ?? {};
    const cost = model.get("cost");
    usage.textContent = `${u.input_tokens ?? 0} in / ${u.output_tokens ?? 0} out tokens` + (cost ? ` \xB7 ${cost}` : "");
    const running = RUNNING.has(status.name);
    stopButton.disabled = !running;
    interruptButton.disabled = !running;
    sendButton.disabled = running;
  };
  let calls = /* @__PURE__ */ new Map();
  let renderedItems = 0;
  const renderItems = () => {
    const from = live.changedFrom;
    if (from !== renderedItems) {
      transcript.replaceChildren();
      calls = /* @__PURE__ */ new Map();
      appendTranscript(transcript, live.items, calls);
    } else {
      appendTranscript(transcript, live.items.slice(from), calls);
    }
    renderedItems = live.items.length;
  };
  const renderLive = () => {
    liveText.textContent = live.text;
    liveThinking.textContent = live.thinking;
    liveTools.replaceChildren();
    const pending = model.get("pending_tools") ?? [];
    const ids = /* @__PURE__ */ new Set([...pending.map((p) => p.id), ...Object.keys(live.tools)]);
    for (const id of ids) {
      const known = pending.find((p) => p.id === id);
      const box = element("div", "mentra-live-tool");
      box.append(element("span", "", `tool call: ${known?.name ?? id}`));
      box.append(element("pre", "", live.tools[id] ?? known?.input_json ?? ""));
      liveTools.append(box);
    }
  };
  const renderApprovals = () => {
    approvalsBox.replaceChildren();
    const approvals = model.get("approvals") ?? [];
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
  const onStream = (changed, message) => {
    if (changed === "live") renderLive();
    if (changed === "items") {
      if (message.start === 0 && !message.basis) helloPending = false;
      renderItems();
      if (message.tail) renderLive();
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
  stopButton.addEventListener("click", () => model.send({ kind: "stop" }), { signal });
  interruptButton.addEventListener("click", () => model.send({ kind: "interrupt" }), { signal });
  const renderResumable = () => {
    resumeBox.replaceChildren();
    const resumable = model.get("resumable") ?? {};
    if (!resumable.kind) return;
    const label = resumable.kind === "replay" ? `This turn was cut and rolled back: \u201C${resumable.text ?? ""}\u201D` : "Tool calls were cut before they finished.";
    const button = element("button", "mentra-resume", resumable.kind === "replay" ? "Replay it" : "Continue");
    button.addEventListener("click", () => model.send({ kind: "resume" }), { signal });
    resumeBox.append(element("span", "mentra-notice-item", label), button);
  };
  const onDisconnect = () => {
    root.dataset.connected = "false";
    for (const button of root.querySelectorAll("button")) button.disabled = true;
    input.disabled = true;
    badge.textContent = "disconnected";
    badge.dataset.status = "idle";
    liveText.textContent = "";
    liveThinking.textContent = "";
    header.append(element(
      "span",
      "mentra-notice-item",
      "its kernel stopped: run %mentra resume in the new kernel for a live view"
    ));
  };
  const unsubscribe = subscribe(model, [
    ["comm_live_update", onDisconnect],
    ...["agent_name", "model_key", "status", "run_generation", "usage", "cost", "progress"].map(
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
    ...shared ? [] : [
      /** @type {[string, (m: StreamMessage) => void]} */
      ["msg:custom", stream.receive]
    ]
  ]);
  stream.views.add(onStream);
  renderHeader();
  renderItems();
  renderLive();
  renderApprovals();
  renderResumable();
  if (live.seq < 0) hello();
  return () => {
    controller.abort();
    unsubscribe();
    stream.views.delete(onStream);
    root.remove();
  };
}
var agent_view_default = { initialize, render };
export {
  LiveStream,
  badgeLabel,
  agent_view_default as default,
  initialize,
  render,
  resolveHtml,
  statusLabel
};
