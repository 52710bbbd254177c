// Time travel in the AgentView: "Fork from here" under every committed message,
// "Edit" under the user's own, and a fork's origin in its header. Kept apart from
// agent_view.js: the view calls these few functions after it renders.

import { button as jpButton, element } from "./dom.js";

/**
 * @typedef {import("./dom.js").Item} Item
 * @typedef {{parent?: string, at?: number}} ForkOrigin
 * @typedef {{kind: "fork", at: number, name: string} | {kind: "edit", index: number, text: string}
 *   | {kind: "edit_source", index: number} | {kind: "undo", first: number}} Request
 * @typedef {{kind: "source", index: number, text: string}} Source
 */

/**
 * The words of user messages, fetched from the kernel when "Edit" opens (sending
 * them with every message would put each prompt on the wire twice).
 */
export class Sources {
  /** @param {(request: Request) => void} send */
  constructor(send) {
    this.send = send;
    /** @type {Map<number, ((text: string) => void)[]>} */
    this.waiting = new Map();
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
}

/**
 * The header's note on a fork: "fork of writer at message 4", or "" for an agent that is none.
 * @param {ForkOrigin | undefined} origin
 */
export function forkOriginLabel(origin) {
  if (!origin || !origin.parent) return "";
  return `fork of ${origin.parent} at message ${origin.at ?? 0}`;
}

/**
 * Where a fork from message `index` cuts the history: after it, or after the tool
 * results that answer it (a fork must not cut a call from its result).
 * @param {Item[]} items
 * @param {number} index
 */
export function forkPoint(items, index) {
  const answered = items.some((i) => i.index === index + 1 && i.kind === "tool_result");
  return answered ? index + 2 : index + 1;
}

/**
 * The first messages of the turns in `items` that changed cells: a turn begins at
 * a user message that answers no tool call, and owns the changes made while the
 * history had more messages than its first and at most as many as the next turn's
 * first (`changedAt`: each change's history length, from the kernel).
 * @param {Item[]} items
 * @param {number[]} changedAt
 * @returns {Set<number>}
 */
export function turnsThatChangedCells(items, changedAt) {
  const answers = new Set(items.filter((i) => i.kind === "tool_result").map((i) => i.index));
  const firsts = items.filter((i) => i.role === "user" && !answers.has(i.index)).map((i) => i.index);
  /** @type {Set<number>} */
  const turns = new Set();
  for (const at of changedAt) {
    const first = Math.max(-1, ...firsts.filter((f) => f < at));
    if (first >= 0) turns.add(first);  // (-1: the turn is on a page not loaded)
  }
  return turns;
}

/**
 * Put an actions row after the last rendered block of each committed message in
 * `container` (blocks carry `data-index`; the row shows on hover or focus):
 * "Fork from here" on every message, "Edit" on the user's own text, and "Undo" on
 * the first message of a turn that changed cells (`changedAt`). Rows from an
 * earlier call are replaced, so call it after every render.
 * @param {HTMLElement} container
 * @param {Item[]} items
 * @param {{agentName: string, send: (request: Request) => void, sources: Sources, editable: boolean,
 *   signal: AbortSignal, changedAt?: number[]}} options
 */
export function addMessageActions(container, items, { agentName, send, sources, editable, signal, changedAt = [] }) {
  const undoable = turnsThatChangedCells(items, changedAt);
  for (const row of container.querySelectorAll(":scope > .mentra-message-actions")) row.remove();
  /** @type {Map<number, Element>} */
  const lastBlock = new Map();
  for (const node of container.children) {
    const index = /** @type {HTMLElement} */ (node).dataset.index;
    if (index !== undefined) lastBlock.set(Number(index), node);
  }
  for (const [index, node] of lastBlock) {
    const own = items.some((i) => i.index === index && i.role === "user" && i.kind === "text");
    const row = element("div", "mentra-message-actions");
    row.dataset.index = String(index);
    const at = forkPoint(items, index);
    const fork = button("mentra-fork", "Fork from here",
      `A new agent with messages 0–${at - 1} of ${agentName}; ${agentName} is unchanged`);
    fork.addEventListener("click", () => openForkForm(row, agentName, at, send, signal), { signal });
    row.append(fork);
    if (own) {
      const edit = button("mentra-edit", "Edit",
        "Send new words in place of this message; the old branch is kept");
      edit.disabled = !editable;
      edit.addEventListener("click", () => openEditForm(row, index, sources, send, signal), { signal });
      row.append(edit);
    }
    if (undoable.has(index)) {
      // The kernel reverts the cells changed from this turn on (a cell the user
      // changed since is left alone) and rewinds; the view's notice says what it did.
      const undo = button("mentra-undo-cells", "Undo",
        "Revert the cells this turn and later ones changed, and rewind the conversation to before this turn");
      undo.disabled = !editable;
      undo.addEventListener("click", () => send({ kind: "undo", first: index }), { signal });
      row.append(undo);
    }
    node.after(row);
  }
}

/**
 * Turn the "Edit" and "Undo" buttons on or off (off while the agent runs: both rewind it).
 * @param {HTMLElement} container
 * @param {boolean} editable
 */
export function setEditable(container, editable) {
  for (const edit of container.querySelectorAll(".mentra-message-actions :is(.mentra-edit, .mentra-undo-cells)")) {
    /** @type {HTMLButtonElement} */ (edit).disabled = !editable;
  }
}

/**
 * @param {HTMLElement} row
 * @param {string} agentName
 * @param {number} at
 * @param {(request: Request) => void} send
 * @param {AbortSignal} signal
 */
function openForkForm(row, agentName, at, send, signal) {
  const form = inlineForm(row);
  const name = /** @type {HTMLInputElement} */ (element("input", "mentra-fork-name"));
  name.value = `${agentName}-fork-${at}`;
  name.setAttribute("aria-label", "name of the new agent");
  const submit = () => {
    const chosen = name.value.trim();
    if (!chosen) return;
    send({ kind: "fork", at, name: chosen });
    closeForm(form);
  };
  const confirm = button("mentra-fork-confirm", "Fork", `Fork the first ${at} messages`);
  confirm.addEventListener("click", submit, { signal });
  name.addEventListener("keydown", (event) => { if (event.key === "Enter") submit(); }, { signal });
  form.append(element("span", "", "new agent:"), name, confirm, cancelButton(form, signal));
  name.focus();
}

/**
 * @param {HTMLElement} row
 * @param {number} index
 * @param {Sources} sources
 * @param {(request: Request) => void} send
 * @param {AbortSignal} signal
 */
function openEditForm(row, index, sources, send, signal) {
  const form = inlineForm(row);
  const text = /** @type {HTMLTextAreaElement} */ (element("textarea", "mentra-edit-text"));
  text.disabled = true;
  text.placeholder = "loading the message…";
  const submit = () => {
    const edited = text.value.trim();
    if (!edited || text.disabled) return;
    send({ kind: "edit", index, text: edited });
    closeForm(form);
  };
  const confirm = button("mentra-edit-confirm", "Send in its place",
    "Rewind to before this message and send the new words; the old branch is kept");
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

/** @param {HTMLElement} row */
function inlineForm(row) {
  row.querySelector(".mentra-inline-form")?.remove();
  const form = element("div", "mentra-inline-form");
  row.append(form);
  row.classList.add("mentra-open"); // stays shown, on a line of its own, while the form is open
  return form;
}

/** @param {HTMLElement} form */
function closeForm(form) {
  form.parentElement?.classList.remove("mentra-open");
  form.remove();
}

/**
 * @param {HTMLElement} form
 * @param {AbortSignal} signal
 */
function cancelButton(form, signal) {
  const cancel = button("mentra-cancel", "Cancel", "");
  cancel.addEventListener("click", () => closeForm(form), { signal });
  return cancel;
}

/**
 * @param {string} className
 * @param {string} label
 * @param {string} title
 */
function button(className, label, title) {
  const node = jpButton(className, label, "minimal");
  if (title) node.title = title;
  return node;
}
