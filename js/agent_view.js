// AgentView: one agent's status, transcript, live stream and controls.
// Plain ES module for anywidget; types are JSDoc, checked with `tsc --checkJs`.

import { hookCellMarks } from "./cell_marks.js";
import { ClampWatcher, appendTranscript, approvalBox, button, cellLink, codeText, element, holdsAnswers, subscribe, toolLabel } from "./dom.js";
import { Sources, addMessageActions, forkOriginLabel, setEditable } from "./time_travel.js";
import { keepCutTurn } from "./cut_turn.js";
import { keepNotebookIdentity, hookNotebookSaves } from "./saved_state.js";
import { shareLiveViews } from "./shared_views.js";

/**
 * @typedef {import("./wire.js").Status} Status
 * @typedef {import("./wire.js").PendingTool} PendingTool
 * @typedef {import("./wire.js").Approval} Approval
 * @typedef {import("./wire.js").StreamMessage} StreamMessage
 * @typedef {import("./wire.js").DeltaMessage} DeltaMessage
 * @typedef {import("./wire.js").AgentViewReceived} Received
 * @typedef {import("./dom.js").Item} Item
 * @typedef {import("./wire.js").AgentViewModel} Model
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
 * A growing text, shown a little at a time. The kernel sends live text at most
 * once per LIVE_WINDOW_MS (the stream's first words at once), so each piece is
 * revealed over the time since the one before, never longer than the window:
 * the reply moves smoothly and is never more than a window behind what arrived.
 * A text that does not extend the shown one (a new stream, a reset) is shown at
 * once. `shown` is what the reader sees now (Stop keeps that).
 */
// agent_view.py LIVE_WINDOW.
export const LIVE_WINDOW_MS = 150;

export class Reveal {
  /** @param {HTMLElement} el */
  constructor(el) {
    this.node = document.createTextNode("");
    el.replaceChildren(this.node);
    this.target = "";
    this.from = 0;
    this.start = 0;
    this.span = 0;
    this.lastPiece = 0;
    this.frame = 0;
  }

  /** The text on screen now. */
  get shown() {
    return this.node.data;
  }

  /** @param {string} text the whole live text now */
  set(text) {
    if (text === this.target) return;
    const now = performance.now();
    const extends_ = this.target !== "" && text.startsWith(this.target);
    const since = now - this.lastPiece;
    this.lastPiece = now;
    if (extends_ && this.node.data.length < this.target.length) {
      this.node.appendData(this.target.slice(this.node.data.length)); // the last piece, in full
    }
    this.target = text;
    if (!extends_ || typeof requestAnimationFrame !== "function") {
      this.stop();
      this.node.data = text;
      return;
    }
    this.from = this.node.data.length;
    this.start = now;
    this.span = Math.min(LIVE_WINDOW_MS, since);
    if (!this.frame) this.frame = requestAnimationFrame(this.step);
  }

  // The time is read here, not taken from the frame's timestamp: `start` is a
  // performance.now() reading, and a host's frame clock may start elsewhere (jsdom's
  // is seconds behind it, which stalled the reveal by as much).
  step = () => {
    const now = performance.now();
    this.frame = 0;
    const done = Math.min(1, (now - this.start) / this.span);
    let length = this.from + Math.round((this.target.length - this.from) * done);
    const code = this.target.charCodeAt(length - 1);
    if (code >= 0xd800 && code < 0xdc00) length += 1; // never half a character (Stop counts what is shown)
    if (length > this.node.data.length) this.node.appendData(this.target.slice(this.node.data.length, length));
    if (this.node.data.length < this.target.length) this.frame = requestAnimationFrame(this.step);
  };

  /** Show the whole text now (no more is coming). */
  finish() {
    this.stop();
    this.node.data = this.target;
  }

  stop() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
  }
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
    this.earlier = 0; // messages before `items` that the kernel sends when asked ("earlier")
  }

  /**
   * @param {StreamMessage|DeltaMessage} message
   * @returns {"live"|"items"|"resync"|""} what changed: the live stream, the
   *   transcript (from index `changedFrom`), or nothing, or "resync" when this
   *   view missed text a message refers to and must ask for everything again
   */
  apply(message) {
    if (message && "s" in message && typeof message.s === "number") return this.applyDelta(message);
    if (!message || "s" in message) return "";
    if (typeof message.seq !== "number" || message.seq <= this.seq) return "";
    if (!["reset", "items", "earlier"].includes(message.kind)) return "";
    this.seq = message.seq;
    if (message.kind === "items") return this.applyItems(message);
    if (message.kind === "earlier") { // the page before the first message we have
      this.items = [...(message.items ?? []), ...this.items];
      this.earlier = message.earlier ?? 0;
      this.changedFrom = 0;
      return "items";
    }
    this.text = message.text ?? "";
    this.thinking = message.thinking ?? "";
    this.tools = { ...(message.tools ?? {}) };
    return "live";
  }

  /**
   * New live text, in the short form the kernel sends it most often: `s` the
   * sequence number, `t` text, `h` thinking, `u` tool input by call id.
   * @param {DeltaMessage} message
   */
  applyDelta(message) {
    if (message.s <= this.seq) return "";
    this.seq = message.s;
    this.text += message.t ?? "";
    this.thinking += message.h ?? "";
    for (const [id, piece] of Object.entries(message.u ?? {})) {
      this.tools[id] = (this.tools[id] ?? "") + piece;
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
    if (start > this.items.length ||
        (basis && (basis[0] !== sources[0].length || basis[1] !== sources[1].length))) {
      return "resync";
    }
    const items = (message.items ?? []).map(({ html_parts, ...item }) =>
      html_parts ? { ...item, html: resolveHtml(html_parts, sources) } : item);
    this.changedFrom = start;
    this.items = [...this.items.slice(0, start), ...items];
    if (typeof message.earlier === "number") this.earlier = message.earlier;
    if (message.tail) {
      this.text = "";
      this.thinking = "";
      this.tools = {};
    }
    if (message.live) { // a hello's answer: the half-streamed reply as it is now
      this.text = message.live.text ?? "";
      this.thinking = message.live.thinking ?? "";
      this.tools = { ...(message.live.tools ?? {}) };
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
    /** @type {Set<(changed: string, message: StreamMessage|DeltaMessage) => void>} */
    this.views = new Set();
    /** @param {StreamMessage|DeltaMessage} message */
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
  hookNotebookSaves(/** @type {any} */ (model).widget_manager);
  shareLiveViews(model); // (shared_views.js)
  keepNotebookIdentity(/** @type {any} */ (model).widget_manager, /** @type {any} */ (model).get("notebook"));
  const stream = new ModelStream();
  modelStreams.set(model, stream);
  const { live } = stream;
  const forgetCutTurn = keepCutTurn(model, () => ({ text: live.text, thinking: live.thinking, items: live.items }));
  model.on("msg:custom", stream.receive);
  return () => {
    forgetCutTurn();
    model.off("msg:custom", stream.receive);
    modelStreams.delete(model);
  };
}

/**
 * The full view of an agent in the page (not `except`), if any.
 * @param {string} name
 * @param {Element} except
 * @returns {HTMLElement|undefined}
 */
export function fullView(name, except) {
  return /** @type {HTMLElement[]} */ ([...document.querySelectorAll('.mentra-agent[data-mentra-scope="full"]')])
    .find((view) => view !== except && view.dataset.mentraAgent === name);
}

// Views of one agent tell each other when they come and go (each widget module
// is loaded on its own, so they meet in the document, not in this module).
const VIEWS_CHANGED = "mentra-agent-views";

/** The header: name, model, status badge, run, usage, fork origin, link to the full view. */
function buildHeader() {
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
  return { header, name, modelName, badge, run, usage, scopeLink, notice, forkOrigin };
}

/**
 * One scrolling area, capped in height, for the transcript and the live stream
 * that follows it.
 */
function buildScroll() {
  const scroll = element("div", "mentra-scroll");
  const transcript = element("div", "mentra-transcript");
  // The kernel sends a transcript's last page; this asks for the page before.
  const earlier = button("mentra-older", "", "minimal");
  earlier.hidden = true; // until the kernel says there is something earlier
  const liveThinking = element("div", "mentra-live mentra-thinking");
  const liveText = element("div", "mentra-live");
  const liveTools = element("div", "mentra-live-tools");
  scroll.append(earlier, transcript, liveThinking, liveText, liveTools);
  return { scroll, transcript, earlier, liveThinking, liveText, liveTools };
}

/** The message box and the run's buttons. */
function buildControls() {
  const controls = element("div", "mentra-controls");
  const input = /** @type {HTMLTextAreaElement} */ (element("textarea", "jp-mod-styled"));
  input.placeholder = "Message the agent (Ctrl+Enter sends)";
  const sendButton = button("mentra-send", "Send", "accept");
  const stopButton = button("mentra-stop", "Stop", "warn");
  stopButton.title = "Stop now: end the reply where it is, keep it (marked as cut) and end the run";
  const finishButton = button("mentra-finish", "Finish round", "reject");
  finishButton.title = "Finish after the current round (its tool calls run), keeping the work";
  const interruptButton = button("mentra-interrupt", "Interrupt", "warn");
  interruptButton.title = "Abort now; the turn is rolled back and can be resumed";
  controls.append(input, sendButton, stopButton, finishButton, interruptButton);
  return { controls, input, sendButton, stopButton, finishButton, interruptButton };
}

/**
 * One rendered AgentView: its elements, what it shows, and one render method
 * per region (header, transcript, live stream, approvals, resumable turn, notice),
 * each called when the traits or stream messages it shows change.
 */
class AgentViewRender {
  /** @param {Model} model @param {HTMLElement} el */
  constructor(model, el) {
    this.model = model;
    this.root = element("div", "mentra-agent");
    this.head = buildHeader();
    this.body = buildScroll();
    this.reveal = new Reveal(this.body.liveText);
    this.approvalsBox = element("div", "mentra-approvals");
    this.resumeBox = element("div", "mentra-resumable");
    this.travelNotice = element("div", "mentra-time-travel-notice");
    this.controls = buildControls();
    // The cells this view's turns changed (cell_marks.js), each a link to its cell.
    this.cellsChanged = element("div", "mentra-cells-changed");
    this.cellsChanged.hidden = true;
    this.root.append(this.head.header, this.cellsChanged, this.body.scroll, this.approvalsBox, this.resumeBox,
      this.travelNotice, this.controls.controls);
    el.append(this.root);

    // Without `initialize` (a host that skips it) the view keeps a stream of its own.
    this.shared = modelStreams.get(model);
    this.stream = this.shared ?? new ModelStream();
    this.live = this.stream.live;
    this.sources = new Sources((request) => model.send(request));
    this.watcher = new ClampWatcher();
    this.controller = new AbortController();
    this.signal = this.controller.signal;
    hookCellMarks(/** @type {any} */ (model).widget_manager,
      () => /** @type {HTMLElement|null} */ (el.isConnected ? el.closest(".jp-Notebook") : null), this.signal);
    /** @type {""|"now"|"round"} a stop clicked here, shown before the kernel confirms it */
    this.stopClicked = "";
    this.connected = true;
    // Follow the stream: keep the scrolling area at its bottom unless the reader
    // scrolled up to read something.
    this.following = true;
    this.followFrame = 0; // the frame that scrolls to the bottom, when one is due
    /** @type {Map<string, HTMLElement>} the tool calls in the rendered transcript, by id */
    this.calls = new Map();
    this.renderedItems = 0;
    // What the approval boxes show: rendered again only when it changed, so a reason
    // being typed survives another view of the agent coming or going.
    this.shownApprovals = "";
    this.helloPending = false;
  }

  // To the bottom once per frame, not once per message: reading scrollHeight right
  // after a change lays the whole page out, and the dozen messages of one tool call
  // (in every view of the agent) each did so, holding up the kernel's messages
  // queued behind them (a run_cell request waited for every one). Where frames do
  // not run (jsdom without them), at once.
  follow() {
    if (!this.following || this.followFrame) return;
    if (typeof requestAnimationFrame !== "function") {
      this.body.scroll.scrollTop = this.body.scroll.scrollHeight;
      return;
    }
    this.followFrame = requestAnimationFrame(() => {
      this.followFrame = 0;
      if (this.following) this.body.scroll.scrollTop = this.body.scroll.scrollHeight;
    });
  }

  running() {
    return RUNNING.has(this.model.get("status")?.name ?? "");
  }

  renderScope() {
    const { model, root } = this;
    /** @type {{kind?: string, first?: number}} */
    const scope = model.get("scope") ?? {};
    root.dataset.mentraAgent = model.get("agent_name") ?? "";
    root.dataset.mentraScope = scope.kind === "turn" ? "turn" : "full";
    this.head.scopeLink.hidden = scope.kind !== "turn";
  }

  renderHeader = () => {
    const { model, head, controls } = this;
    this.renderScope();
    head.name.textContent = model.get("agent_name") ?? "";
    head.modelName.textContent = model.get("model_key") ?? "";
    /** @type {Status} */
    const status = model.get("status") ?? { name: "idle" };
    /** @type {Approval[]} */
    const approvals = model.get("approvals") ?? [];
    const running = RUNNING.has(status.name ?? "");
    if (!running) this.stopClicked = "";
    const stopping = running ? (status.stopping || this.stopClicked) : "";
    if (!this.connected) return; // frozen at "disconnected"
    head.badge.textContent = stopping ? "stopping…" : badgeLabel(status, approvals, model.get("progress") ?? "");
    head.badge.dataset.status = stopping ? "stopping" : approvals.length ? "waiting" : status.name;
    this.root.dataset.stopping = stopping || "";
    head.run.textContent = `run ${model.get("run_generation") ?? 0}`;
    const u = model.get("usage") ?? {};
    // The cost text is made in the kernel ("cost unknown" when a model has no price).
    const cost = model.get("cost");
    head.usage.textContent = `${u.input_tokens ?? 0} in / ${u.output_tokens ?? 0} out tokens` +
      (cost ? ` · ${cost}` : "");
    controls.stopButton.disabled = !running || stopping === "now";
    controls.finishButton.disabled = !running || Boolean(stopping);
    controls.interruptButton.disabled = !running;
    controls.sendButton.disabled = running;
    head.forkOrigin.textContent = forkOriginLabel(model.get("fork_origin"));
    setEditable(this.body.transcript, !running && this.connected);
  };

  // New messages are appended; a rollback (items replaced from an earlier index) re-renders.
  renderItems() {
    const { live, body: { transcript, earlier } } = this;
    const from = live.changedFrom;
    if (from !== this.renderedItems) {
      this.watcher.clear();
      transcript.replaceChildren();
      this.calls = new Map();
      appendTranscript(transcript, live.items, this.calls, this.watcher);
    } else {
      appendTranscript(transcript, live.items.slice(from), this.calls, this.watcher);
    }
    this.renderedItems = live.items.length;
    this.listChangedCells();
    earlier.hidden = live.earlier <= 0;
    earlier.disabled = false;
    earlier.textContent = `Show ${live.earlier} earlier message${live.earlier === 1 ? "" : "s"}`;
    this.renderActions();
    this.follow();
  }

  renderActions = () => {
    const { model } = this;
    addMessageActions(this.body.transcript, this.live.items, {
      agentName: model.get("agent_name") ?? "", send: (request) => model.send(request), sources: this.sources,
      editable: !this.running() && this.connected, signal: this.signal,
      changedAt: model.get("changed_cells_at") ?? [] });
  };

  renderLive = () => {
    const { live, body } = this;
    this.reveal.set(live.text);
    body.liveThinking.textContent = live.thinking;
    body.liveTools.replaceChildren();
    /** @type {PendingTool[]} */
    const pending = this.model.get("pending_tools") ?? [];
    const ids = new Set([...pending.map((p) => p.id), ...Object.keys(live.tools)]);
    for (const id of ids) {
      // A call already in the transcript (running, or waiting for approval) shows
      // there and in its approval box, not a third time here.
      if (this.calls.has(id)) continue;
      const known = pending.find((p) => p.id === id);
      const box = element("div", "mentra-live-tool");
      box.append(element("span", "", `tool call: ${known?.name ?? id}`));
      box.append(codeText("", live.tools[id] ?? known?.input_json ?? ""));
      body.liveTools.append(box);
    }
    this.follow();
  };

  // One box per paused call, in one view of the agent (`holdsAnswers`); the
  // kernel validates every answer.
  renderApprovals = () => {
    const { model, approvalsBox } = this;
    /** @type {Approval[]} */
    const approvals = this.connected ? model.get("approvals") ?? [] : [];
    const holder = holdsAnswers(this.root, "data-mentra-agent", model.get("agent_name") ?? "");
    const key = JSON.stringify([holder, approvals]);
    if (key === this.shownApprovals) return;
    this.shownApprovals = key;
    approvalsBox.replaceChildren();
    if (!approvals.length) return;
    if (!holder) {
      const names = [...new Set(approvals.map((a) => toolLabel(a.name)))].join(", ");
      approvalsBox.append(element("div", "mentra-notice-item",
        `${names} waits for your approval in the newest view of this agent, below`));
      return;
    }
    for (const a of approvals) {
      const call = { id: a.id, title: `${toolLabel(a.name)} wants to run`, input: a.input,
        alwaysTitle: `Run this call, and let this agent call ${a.name} without asking from now on` };
      approvalsBox.append(approvalBox(call, ({ approve, always, reason }) => model.send(approve
        ? { kind: "approve", call_id: a.id, always }
        : { kind: "deny", call_id: a.id, reason }), this.signal));
    }
  };

  // A turn cut by a restart, an interrupt or an error: say what was lost and offer
  // to replay it (or to continue after cut tool calls), as `agent.resume()` would.
  renderResumable = () => {
    const { model, resumeBox } = this;
    resumeBox.replaceChildren();
    /** @type {{kind?: string, text?: string}} */
    const resumable = model.get("resumable") ?? {};
    if (!resumable.kind || !this.connected) return;
    const label = resumable.kind === "replay"
      ? `This turn was cut and rolled back: “${resumable.text ?? ""}”`
      : "Tool calls were cut before they finished.";
    const resume = button("mentra-resume", resumable.kind === "replay" ? "Replay it" : "Continue", "accept");
    resume.addEventListener("click", () => model.send({ kind: "resume" }), { signal: this.signal });
    resumeBox.append(element("span", "mentra-notice-item", label), resume);
  };

  renderNotice = () => { this.travelNotice.textContent = this.model.get("notice") ?? ""; };

  // Live once the kernel has spoken to this model: until then (a model restored from
  // a saved notebook's state, with no kernel behind it) the view stays hidden and
  // the saved markdown above it is what the reader sees (mentra.css).
  markLive() { this.root.dataset.mentraLive = String(this.live.seq >= 0); }

  hello() {
    this.helloPending = true;
    this.model.send({ kind: "hello" }); // the transcript and the half-streamed text we missed
  }

  /** @param {string} changed @param {StreamMessage|DeltaMessage} message */
  onStream = (changed, message) => {
    this.markLive();
    const other = /** @type {{kind?: string}} */ (message);
    if (other?.kind === "source") { // the words "Edit" asked for, not part of the stream
      this.sources.receive(/** @type {import("./time_travel.js").Source} */ (other));
      return;
    }
    if (changed === "live") this.renderLive();
    if (changed === "items" && "kind" in message) {
      if (message.start === 0 && !message.basis) this.helloPending = false;
      this.renderItems();
      this.renderLive(); // a committed call leaves the live area
    }
    if (changed === "resync" && !this.helloPending) this.hello();
  };

  send = () => {
    const { input } = this.controls;
    const text = input.value.trim();
    if (!text) return;
    this.model.send({ kind: "send", text });
    input.value = "";
  };

  /** @param {"now"|"round"} how */
  stop(how) {
    const { live } = this;
    this.stopClicked = how;
    this.renderHeader(); // "stopping…" at once, before the kernel hears of it
    // "Stop" keeps the reply as far as this view shows it (in code points, as Python
    // counts), not what streamed while the click travelled to the kernel.
    this.model.send(how === "now" && live.seq >= 0
      ? { kind: "stop", now: true, shown: [...this.reveal.shown].length, seq: live.seq }
      : { kind: "stop", now: how === "now" });
  }

  askEarlier = () => {
    this.body.earlier.disabled = true; // until the page arrives
    // The index of our first message: a turn view's messages begin at its scope's `first`.
    this.model.send({ kind: "earlier", before: (this.model.get("scope")?.first ?? 0) + this.live.earlier });
  };

  // A turn view's link to the full view of its agent, outlined there.
  goToFullView = () => {
    const agent = this.model.get("agent_name") ?? "";
    const full = fullView(agent, this.root);
    const { notice } = this.head;
    if (full) {
      full.scrollIntoView({ behavior: "smooth", block: "start" });
      // Outlined until the reader's next click anywhere, not for a fixed time: on a
      // busy page a timer could end before the scroll does.
      full.classList.add("mentra-highlight");
      document.addEventListener("pointerdown", () => full.classList.remove("mentra-highlight"),
        { once: true, capture: true });
      notice.textContent = "";
    } else {
      notice.textContent = `no full view of ${agent} in this notebook: run %mentra show ${agent}`;
    }
  };

  // Jupyter fires comm_live_update on a model whose kernel went away (a restart or
  // shutdown), possibly more than once; this output can no longer act, so say so
  // (once) instead of looking alive.
  onDisconnect = () => {
    if (!this.connected) return;
    this.connected = false;
    const { root, head } = this;
    root.dataset.connected = "false";
    for (const node of root.querySelectorAll("button")) /** @type {HTMLButtonElement} */ (node).disabled = true;
    this.controls.input.disabled = true;
    head.badge.textContent = "disconnected";
    head.badge.dataset.status = "idle";
    this.reveal.finish(); // what had streamed stays readable (issue 30.2)
    this.renderApprovals();
    head.notice.textContent = "its kernel stopped: run %mentra resume in the new kernel for a live view";
  };

  /** @param {Event} event */
  onViewsChanged = (event) => {
    if (/** @type {CustomEvent} */ (event).detail === this.model.get("agent_name")) this.renderApprovals();
  };

  listChangedCells() {
    const { cellsChanged } = this;
    const ids = [...new Set([...this.body.transcript.querySelectorAll(".mentra-cell-link")]
      .map((link) => /** @type {HTMLElement} */ (link).dataset.cell ?? ""))].filter(Boolean);
    cellsChanged.hidden = ids.length === 0;
    if (cellsChanged.dataset.cells === ids.join(" ")) return;
    cellsChanged.dataset.cells = ids.join(" ");
    cellsChanged.replaceChildren(element("span", "", "cells changed:"), ...ids.map((id) => cellLink(id, id)));
  }

  announce = () => document.dispatchEvent(new CustomEvent(VIEWS_CHANGED, { detail: this.model.get("agent_name") }));

  /** The DOM's events: clicks, keys, scrolling, other views of the agent. */
  listen() {
    const { signal, controls, body } = this;
    controls.sendButton.addEventListener("click", this.send, { signal });
    body.earlier.addEventListener("click", this.askEarlier, { signal });
    controls.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) this.send();
    }, { signal });
    controls.stopButton.addEventListener("click", () => this.stop("now"), { signal });
    controls.finishButton.addEventListener("click", () => this.stop("round"), { signal });
    controls.interruptButton.addEventListener("click", () => this.model.send({ kind: "interrupt" }), { signal });
    body.scroll.addEventListener("scroll", () => {
      const { scroll } = body;
      this.following = scroll.scrollHeight - scroll.scrollTop - scroll.clientHeight < 24;
    }, { signal, passive: true });
    this.head.scopeLink.addEventListener("click", this.goToFullView, { signal });
    document.addEventListener(VIEWS_CHANGED, this.onViewsChanged, { signal });
  }

  /** The model's events: trait changes, the kernel going away, stream messages. */
  subscribe() {
    const unsubscribe = subscribe(this.model, [
      ["comm_live_update", this.onDisconnect],
      ...["agent_name", "model_key", "status", "run_generation", "usage", "cost", "progress", "scope"].map(
        (trait) => /** @type {[string, () => void]} */ ([`change:${trait}`, this.renderHeader])),
      ["change:pending_tools", this.renderLive],
      ["change:approvals", () => { this.renderApprovals(); this.renderHeader(); }],
      ["change:resumable", this.renderResumable],
      ["change:fork_origin", this.renderHeader],
      ["change:notice", this.renderNotice],
      ["change:changed_cells_at", this.renderActions],
      ...(this.shared ? [] : [/** @type {[string, (m: StreamMessage|DeltaMessage) => void]} */ (["msg:custom", this.stream.receive])]),
    ]);
    this.stream.views.add(this.onStream);
    return () => {
      unsubscribe();
      this.stream.views.delete(this.onStream);
    };
  }

  renderAll() {
    this.markLive();
    this.renderHeader();
    this.renderItems();
    this.renderLive();
    this.renderApprovals();
    this.renderResumable();
    this.renderNotice();
  }
}

/** @param {{model: Model, el: HTMLElement}} context */
function render({ model, el }) {
  const view = new AgentViewRender(model, el);
  view.listen();
  const unsubscribe = view.subscribe();
  view.renderAll();
  if (view.live.seq < 0) view.hello(); // nothing received yet: ask (answered once the kernel is free)
  // The output area attaches this view to the page after `render` returns, and a
  // windowed notebook detaches and re-attaches cells as they scroll: each time,
  // every view of this agent decides again which one holds the approvals.
  const attached = requestAnimationFrame(view.announce);
  const visibility = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver(view.announce);
  visibility?.observe(view.root);

  return () => {
    cancelAnimationFrame(attached);
    if (view.followFrame) cancelAnimationFrame(view.followFrame);
    view.reveal.stop();
    visibility?.disconnect();
    view.controller.abort();
    unsubscribe();
    view.watcher.clear();
    view.root.remove();
    view.announce();
  };
}

export default { initialize, render };
