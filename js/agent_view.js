// AgentView: one agent's status, transcript, live stream and controls.
// Plain ES module for anywidget; types are JSDoc, checked with `tsc --checkJs`.

import { appendTranscript, approvalBox, element, subscribe, toolLabel } from "./dom.js";

/**
 * @typedef {{name: string, tool_id?: string|null, tool_name?: string|null, error?: string|null}} Status
 * @typedef {{id: string, name: string, input_json: string}} PendingTool
 * @typedef {{id: string, name: string, input: string}} Approval
 * @typedef {import("./dom.js").Item & {html_parts?: (string|number[])[]}} WireItem
 * @typedef {{kind: "delta"|"reset"|"items", seq: number, text?: string, thinking?: string,
 *   tools?: Record<string, string>, start?: number, items?: WireItem[], tail?: string[],
 *   basis?: number[]}} StreamMessage
 * @typedef {import("./dom.js").Item} Item
 * @typedef {import("./dom.js").Model} Model
 */

const RUNNING = new Set(["awaiting_model", "streaming", "executing_tool"]);

/**
 * @param {Status} status
 * @param {string} [progress] the running call's latest progress report
 */
export function statusLabel(status, progress = "") {
  if (!status || !status.name) return "idle";
  if (status.name === "executing_tool") {
    const running = `running ${toolLabel(status.tool_name ?? "tool")}`;
    return progress ? `${running}: ${progress}` : running;
  }
  if (status.name === "failed") return `failed: ${status.error ?? ""}`;
  return status.name.replace("_", " ");
}

/**
 * The header badge: a paused run says what it waits for, a running call its progress.
 * @param {Status} status
 * @param {Approval[]} approvals
 * @param {string} [progress]
 */
export function badgeLabel(status, approvals, progress = "") {
  if (approvals && approvals.length) {
    const names = [...new Set(approvals.map((a) => toolLabel(a.name)))].join(", ");
    return `waiting for approval: ${names}`;
  }
  return statusLabel(status, progress);
}

/** @param {string} text */
function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * A message's HTML from its wire form: literal strings, and `[source, start, end]`
 * spans of the streamed text (0) or thinking (1) this view already holds. Spans are
 * escaped: a span resolved against the wrong text garbles, it never injects markup.
 * @param {(string|number[])[]} parts
 * @param {string[]} sources
 */
export function resolveHtml(parts, sources) {
  return parts.map((part) => {
    if (typeof part === "string") return part;
    const [source, start, end] = part;
    return escapeHtml((sources[source] ?? "").slice(start, end));
  }).join("");
}

/**
 * The view's state, fed by sequenced custom messages from the kernel: the
 * committed transcript (`items`) and the half-streamed reply. Messages at or
 * below the last applied sequence number are duplicates and ignored.
 */
export class LiveStream {
  constructor() {
    this.seq = -1;
    this.text = "";
    this.thinking = "";
    /** @type {Record<string, string>} */
    this.tools = {};
    /** @type {Item[]} */
    this.items = [];
    this.changedFrom = 0; // where the last `items` message replaced the transcript
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
      this.tools = { ...(message.tools ?? {}) };
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
    if (start > this.items.length ||
        (basis && (basis[0] !== sources[0].length || basis[1] !== sources[1].length))) {
      return "resync";
    }
    const items = (message.items ?? []).map(({ html_parts, ...item }) =>
      html_parts ? { ...item, html: resolveHtml(html_parts, sources) } : item);
    this.changedFrom = start;
    this.items = [...this.items.slice(0, start), ...items];
    if (message.tail) {
      this.text = "";
      this.thinking = "";
      this.tools = {};
    }
    return "items";
  }
}

/**
 * One LiveStream per widget model, fed from the model's creation on (issue 15.9):
 * the kernel sends a view's transcript when it displays it, without waiting for a
 * hello that a kernel busy with Run All would answer only after the last cell.
 * Every view of the model renders from it.
 */
class ModelStream {
  constructor() {
    this.live = new LiveStream();
    /** @type {Set<(changed: string, message: StreamMessage) => void>} */
    this.views = new Set();
    /** @param {StreamMessage} message */
    this.receive = (message) => {
      const changed = this.live.apply(message);
      for (const view of this.views) view(changed, message);
    };
  }
}

/** @type {WeakMap<Model, ModelStream>} */
const modelStreams = new WeakMap();

/** @param {{model: Model}} context */
export function initialize({ model }) {
  const stream = new ModelStream();
  modelStreams.set(model, stream);
  model.on("msg:custom", stream.receive);
  return () => {
    model.off("msg:custom", stream.receive);
    modelStreams.delete(model);
  };
}

/** @param {{model: Model, el: HTMLElement}} context */
export function render({ model, el }) {
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
  const input = /** @type {HTMLTextAreaElement} */ (element("textarea"));
  input.placeholder = "Message the agent (Ctrl+Enter sends)";
  const sendButton = /** @type {HTMLButtonElement} */ (element("button", "mentra-send", "Send"));
  const stopButton = /** @type {HTMLButtonElement} */ (element("button", "mentra-stop", "Stop"));
  stopButton.title = "Finish after the current round, keeping the work";
  const interruptButton = /** @type {HTMLButtonElement} */ (element("button", "mentra-interrupt", "Interrupt"));
  interruptButton.title = "Abort now; the turn is rolled back and can be resumed";
  controls.append(input, sendButton, stopButton, interruptButton);
  root.append(header, transcript, liveThinking, liveText, liveTools, approvalsBox, resumeBox, controls);
  el.append(root);

  // Without `initialize` (a host that skips it) the view keeps a stream of its own.
  const shared = modelStreams.get(model);
  const stream = shared ?? new ModelStream();
  const live = stream.live;

  const renderHeader = () => {
    name.textContent = model.get("agent_name");
    modelName.textContent = model.get("model_key");
    /** @type {Status} */
    const status = model.get("status") ?? { name: "idle" };
    /** @type {Approval[]} */
    const approvals = model.get("approvals") ?? [];
    badge.textContent = badgeLabel(status, approvals, model.get("progress") ?? "");
    badge.dataset.status = approvals.length ? "waiting" : status.name;
    run.textContent = `run ${model.get("run_generation") ?? 0}`;
    const u = model.get("usage") ?? {};
    // The cost text is made in the kernel ("cost unknown" when a model has no price).
    const cost = model.get("cost");
    usage.textContent = `${u.input_tokens ?? 0} in / ${u.output_tokens ?? 0} out tokens` +
      (cost ? ` · ${cost}` : "");
    const running = RUNNING.has(status.name);
    stopButton.disabled = !running;
    interruptButton.disabled = !running;
    sendButton.disabled = running;
  };
  /** @type {Map<string, HTMLElement>} */
  let calls = new Map();
  let renderedItems = 0;
  // New messages are appended; a rollback (items replaced from an earlier index) re-renders.
  const renderItems = () => {
    const from = live.changedFrom;
    if (from !== renderedItems) {
      transcript.replaceChildren();
      calls = new Map();
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
    /** @type {PendingTool[]} */
    const pending = model.get("pending_tools") ?? [];
    const ids = new Set([...pending.map((p) => p.id), ...Object.keys(live.tools)]);
    for (const id of ids) {
      const known = pending.find((p) => p.id === id);
      const box = element("div", "mentra-live-tool");
      box.append(element("span", "", `tool call: ${known?.name ?? id}`));
      box.append(element("pre", "", live.tools[id] ?? known?.input_json ?? ""));
      liveTools.append(box);
    }
  };
  // One box per paused call; the kernel validates every answer.
  const renderApprovals = () => {
    approvalsBox.replaceChildren();
    /** @type {Approval[]} */
    const approvals = model.get("approvals") ?? [];
    for (const a of approvals) {
      const call = { id: a.id, title: `${toolLabel(a.name)} wants to run`, input: a.input,
        alwaysTitle: `Run this call, and let this agent call ${a.name} without asking from now on` };
      approvalsBox.append(approvalBox(call, ({ approve, always, reason }) => model.send(approve
        ? { kind: "approve", call_id: a.id, always }
        : { kind: "deny", call_id: a.id, reason }), signal));
    }
  };
  let helloPending = false;
  const hello = () => {
    helloPending = true;
    model.send({ kind: "hello" }); // the transcript and the half-streamed text we missed
  };
  /** @param {string} changed @param {StreamMessage} message */
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

  // A turn cut by a restart, an interrupt or an error: say what was lost and offer
  // to replay it (or to continue after cut tool calls), as `agent.resume()` would.
  const renderResumable = () => {
    resumeBox.replaceChildren();
    /** @type {{kind?: string, text?: string}} */
    const resumable = model.get("resumable") ?? {};
    if (!resumable.kind) return;
    const label = resumable.kind === "replay"
      ? `This turn was cut and rolled back: “${resumable.text ?? ""}”`
      : "Tool calls were cut before they finished.";
    const button = element("button", "mentra-resume", resumable.kind === "replay" ? "Replay it" : "Continue");
    button.addEventListener("click", () => model.send({ kind: "resume" }), { signal });
    resumeBox.append(element("span", "mentra-notice-item", label), button);
  };

  // Jupyter fires comm_live_update on a model whose kernel went away (a restart or
  // shutdown); this output can no longer act, so say so instead of looking alive.
  const onDisconnect = () => {
    root.dataset.connected = "false";
    for (const button of root.querySelectorAll("button")) button.disabled = true;
    input.disabled = true;
    badge.textContent = "disconnected";
    badge.dataset.status = "idle";
    liveText.textContent = "";
    liveThinking.textContent = "";
    header.append(element("span", "mentra-notice-item",
      "its kernel stopped: run %mentra resume in the new kernel for a live view"));
  };

  const unsubscribe = subscribe(model, [
    ["comm_live_update", onDisconnect],
    ...["agent_name", "model_key", "status", "run_generation", "usage", "cost", "progress"].map(
      (trait) => /** @type {[string, () => void]} */ ([`change:${trait}`, renderHeader])),
    ["change:pending_tools", renderLive],
    ["change:approvals", () => { renderApprovals(); renderHeader(); }],
    ["change:resumable", renderResumable],
    ...(shared ? [] : [/** @type {[string, (m: StreamMessage) => void]} */ (["msg:custom", stream.receive])]),
  ]);
  stream.views.add(onStream);

  renderHeader();
  renderItems();
  renderLive();
  renderApprovals();
  renderResumable();
  if (live.seq < 0) hello(); // nothing received yet: ask (answered once the kernel is free)

  return () => {
    controller.abort();
    unsubscribe();
    stream.views.delete(onStream);
    root.remove();
  };
}

export default { initialize, render };
