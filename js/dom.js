// Shared DOM helpers of the mentra-nb widgets. Each widget imports them;
// `npm run build` bundles them into each widget's single module in
// mentra_nb/static/ (anywidget loads one module, where relative imports cannot resolve).

import { changedCell } from "./cell_marks.js";

/**
 * @typedef {import("./wire.js").Item} Item
 * @typedef {{on(event: string, handler: (...args: any[]) => void): void,
 *   off(event: string, handler: (...args: any[]) => void): void}} Events
 *   what `subscribe` needs of a model (each view's model is typed in wire.d.ts)
 */

/**
 * @param {string} tag
 * @param {string} [className]
 * @param {string} [text]
 * @returns {HTMLElement}
 */
export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * A button in JupyterLab's own look: `tone` "accept" (blue), "warn" (red),
 * "reject" (grey) are its dialog buttons; "minimal" its small toolbar buttons.
 * The classes are JupyterLab's (Notebook 7 shares them); mentra.css styles the
 * same buttons in hosts without them.
 * @param {string} className
 * @param {string} text
 * @param {"accept"|"warn"|"reject"|"minimal"} tone
 * @returns {HTMLButtonElement}
 */
export function button(className, text, tone) {
  const classes = tone === "minimal"
    ? "jp-Button jp-mod-minimal jp-mod-small"
    : `jp-Button jp-mod-styled jp-mod-${tone}`;
  const node = /** @type {HTMLButtonElement} */ (element("button", `${classes} ${className}`, text));
  node.type = "button";
  return node;
}

/**
 * Of every view in the page marked with `attribute` = `name` (the views of one
 * agent, or of one team), whether `root` holds the answer buttons: the last one
 * (the newest cell) does, so a paused call or a request is answered in one place
 * and the others point at it. A view not in the page holds its own.
 * @param {HTMLElement} root
 * @param {"data-mentra-agent"|"data-mentra-team"} attribute
 * @param {string} name
 */
export function holdsAnswers(root, attribute, name) {
  const views = [...document.querySelectorAll(`[${attribute}]`)]
    .filter((view) => view.getAttribute(attribute) === name);
  return !root.isConnected || views.length === 0 || views[views.length - 1] === root;
}

/**
 * Render the committed transcript. Tool results are shown inside the
 * collapsible block of the call they answer.
 * @param {HTMLElement} container
 * @param {Item[]} items
 * @param {ClampWatcher|null} [watcher]
 */
export function renderTranscript(container, items, watcher = null) {
  watcher?.clear();
  container.replaceChildren();
  appendTranscript(container, items, new Map(), watcher);
}

/**
 * Append items to a rendered transcript. `calls` maps the tool calls rendered
 * so far to their blocks, so a later result finds its call.
 * @param {HTMLElement} container
 * @param {Item[]} items
 * @param {Map<string, HTMLElement>} calls
 * @param {ClampWatcher|null} [watcher] measures long messages for "Show more"
 */
export function appendTranscript(container, items, calls, watcher = null) {
  for (const item of items) {
    if (item.kind === "tool_result") {
      const result = codeText(item.is_error ? "mentra-error" : "", item.content ?? "");
      const host = item.id ? calls.get(item.id) : undefined;
      const cut = item.truncated
        ? element("div", "mentra-notice-item", "… the first 4,000 characters of the result (agent.history has all of it)")
        : null;
      const shown = resultImages(item);
      const cell = host ? changedCell(host.dataset.tool ?? "", host.dataset.input ?? "", item.content ?? "") : "";
      if (host && cell) host.append(cellLink(cell, `go to cell ${cell}`));
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
    node.dataset.index = String(item.index); // which message: time travel's actions follow its last block
    node.dataset.kind = item.kind;
    if (item.kind === "text" || item.kind === "notice") {
      // Rendered by markdown-it in the kernel with raw HTML disabled.
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
      fold.append(codeText("", item.input ?? ""));
      node.append(fold);
      // (a cell tool's result links to the cell it changed: cell_marks.js)
      fold.dataset.tool = item.name ?? "";
      fold.dataset.input = item.input ?? "";
      if (item.id) calls.set(item.id, fold);
    } else if (item.kind === "image") {
      const img = /** @type {HTMLImageElement} */ (element("img"));
      img.src = `data:${item.media_type};base64,${item.data}`;
      node.append(img);
    }
    // A reply cut by Stop: its text (or thinking) ends here, visibly.
    if (item.truncated && (item.kind === "text" || item.kind === "thinking")) {
      node.dataset.truncated = "true";
      node.append(element("div", "mentra-truncated", "stopped here: the rest of this reply was not generated"));
    }
    container.append(node);
  }
}

/**
 * The images a tool showed the model (view_figure's plot, an MCP screenshot),
 * as thumbnails under its result; a click opens one at full size.
 * @param {Item} item
 * @returns {HTMLElement|null}
 */
function resultImages(item) {
  if (!item.images?.length) return null;
  const row = element("div", "mentra-result-images");
  for (const image of item.images) {
    if (!image.media_type.startsWith("image/")) continue;
    const img = /** @type {HTMLImageElement} */ (element("img", "mentra-thumb"));
    img.src = `data:${image.media_type};base64,${image.data}`;
    img.alt = "image the tool showed the model";
    img.title = "click to enlarge";
    img.addEventListener("click", () => img.classList.toggle("mentra-thumb-open"));
    row.append(img);
  }
  return row;
}

/**
 * Long messages are clamped to a height (mentra.css: a message 24 lines, a
 * prompt 6) with a "Show more" toggle. Whether one overflows is known only once
 * the browser has laid it out, so a `ClampWatcher` adds the toggle to those that
 * overflow; a message that fits has none.
 * @param {HTMLElement} body a message's content
 * @param {"message"|"prompt"} size
 */
function clamp(body, size) {
  body.classList.add("mentra-clamp");
  body.dataset.clamp = size;
}

/**
 * Give a clamped body that overflows its limit a "Show more" toggle (once).
 * @param {Element} body
 */
export function measureClamped(body) {
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

/**
 * A view's watcher of its clamped messages: it measures each once the browser
 * has laid it out (and again when it resizes, e.g. a hidden output shown).
 * Without a layout engine (a test's DOM) it does nothing; tests call
 * `measureClamped` themselves.
 */
export class ClampWatcher {
  constructor() {
    this.observer = typeof ResizeObserver === "undefined" ? null
      : new ResizeObserver((entries) => { for (const entry of entries) measureClamped(entry.target); });
  }

  /** @param {Element} body a clamped message body */
  watch(body) {
    this.observer?.observe(body);
  }

  /** Stop watching everything (before a re-render, and when the view closes). */
  clear() {
    this.observer?.disconnect();
  }
}

/**
 * Code blocks get a small toolbar: Copy, and "Insert as cell" when this output
 * sits in a JupyterLab or Notebook 7 notebook.
 * @param {HTMLElement} body
 */
function addCodeTools(body) {
  for (const code of body.querySelectorAll("code")) {
    if (!code.closest("pre")) markHidden(code);  // inline code; a block's is marked below
  }
  for (const pre of body.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    if (!code) continue;
    highlightCode(code);
    markHidden(code);
    // A fence's text ends with its closing newline; a cell's source does not.
    const source = () => (code.textContent ?? "").replace(/\n$/, "");
    const bar = element("div", "mentra-code-tools");
    const copy = button("mentra-copy", "Copy", "minimal");
    copy.title = "Copy this code";
    copy.addEventListener("click", () => {
      copyText(source()).then(
        () => flash(copy, "Copied"),
        () => flash(copy, "Copy failed"));
    });
    const insert = button("mentra-insert", "Insert as cell", "minimal");
    insert.title = "Insert this code as a new cell below the one that shows it";
    insert.addEventListener("click", () => {
      if (insertCell(insert, source())) {
        flash(insert, "Inserted");
      } else {
        // Not in JupyterLab or Notebook 7 (VS Code, Colab...): the clipboard is the way in.
        copyText(source()).then(() => flash(insert, "No notebook here: copied"),
          () => flash(insert, "No notebook here"));
      }
    });
    bar.append(copy, insert);
    const frame = element("div", "mentra-code");
    pre.replaceWith(frame);
    frame.append(bar, pre);
  }
}

// Bidi controls, zero-width and other invisible characters: the same class as
// mentra_nb/notebook/_hidden_characters.py (a Python test compares them).
const HIDDEN = /[\u00AD\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u3164\uFEFF\uFFA0\u{E0000}-\u{E007F}]/gu;

/**
 * Whether the code point is part of an emoji sequence (a joiner between two
 * such is the emoji's own, as in a family or a flag).
 * @param {number | undefined} code
 */
function isEmoji(code) {
  if (code === undefined) return false;
  return code >= 0x1F000 || (code >= 0x2600 && code <= 0x27BF) || code === 0xFE0F;
}

/**
 * The code point that ends just before `index` in `text`.
 * @param {string} text
 * @param {number} index
 */
function codePointBefore(text, index) {
  const low = text.charCodeAt(index - 1);
  return low >= 0xDC00 && low <= 0xDFFF && index >= 2 ? text.codePointAt(index - 2) : text.codePointAt(index - 1);
}

/**
 * Mark the hidden characters in the text under `root` (code a model wrote): each
 * becomes a visible `<U+202E>` badge, as GitHub and VS Code show them, so a
 * bidi override cannot make code read other than it runs. Copy and "Insert as
 * cell" take the marked text. A zero-width joiner inside an emoji is left alone.
 * @param {Node} root
 */
export function markHidden(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  /** @type {Text[]} */
  const texts = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(/** @type {Text} */ (node));
  for (const text of texts) {
    const value = text.data;
    /** @type {(string|HTMLElement)[]} */
    const parts = [];
    let at = 0;
    for (const match of value.matchAll(HIDDEN)) {
      const index = match.index ?? 0;
      if (match[0] === "\u200D" && index > 0 && isEmoji(codePointBefore(value, index))
          && isEmoji(value.codePointAt(index + 1))) continue;
      const code = `U+${(match[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
      const badge = element("span", "mentra-hidden-char", `<${code}>`);
      badge.title = `a hidden character (${code}) in the text, shown here in its place`;
      parts.push(value.slice(at, index), badge);
      at = index + match[0].length;
    }
    if (!parts.length) continue;
    parts.push(value.slice(at));
    text.replaceWith(...parts.filter((p) => p !== ""));
  }
}

/**
 * Code or tool traffic as preformatted text, its hidden characters marked.
 * @param {string} className
 * @param {string} text
 * @returns {HTMLElement}
 */
export function codeText(className, text) {
  const pre = element("pre", className, text);
  markHidden(pre);
  return pre;
}

const TOKEN = /^(?:([a-z][a-z0-9]{0,3}):)?(\d+)$/;

/**
 * Colour a code block from the token map the kernel sent with it (`data-hl`:
 * "class:length" or "length" for plain text, lengths in UTF-16 units; see
 * mentra_nb/notebook/_markdown_html.py). The text is the block's own, cut into
 * spans: nothing in the map becomes markup but a validated class name. A map
 * that does not fit the text leaves the block plain.
 * @param {HTMLElement} code
 */
export function highlightCode(code) {
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

/** @param {HTMLButtonElement} node @param {string} text */
function flash(node, text) {
  const label = node.dataset.label ?? node.textContent ?? "";
  node.dataset.label = label;
  node.textContent = text;
  setTimeout(() => { node.textContent = label; }, 1500);
}

/**
 * The clipboard API where the page may use it, else the older copy command.
 * @param {string} text
 * @returns {Promise<void>}
 */
export async function copyText(text) {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return;
    } catch {
      // Not allowed here (an insecure origin, a denied permission): try the old way.
    }
  }
  const area = /** @type {HTMLTextAreaElement} */ (element("textarea"));
  area.value = text;
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  if (!copied) throw new Error("the browser refused to copy");
}

/**
 * Insert `source` as a new code cell right below the notebook cell that holds
 * `from`. A widget has no handle on JupyterLab's application, so this speaks the
 * notebook's own protocol for a drop of cells from another notebook (Lumino's
 * `lm-drop` event carrying `application/vnd.jupyter.cells`): the notebook
 * inserts them before the cell marked as the drop target (`jp-mod-dropTarget`,
 * which its drag-over handler would set), or at the end when there is none.
 * JupyterLab and Notebook 7 share that notebook widget.
 * @param {Element} from
 * @param {string} source
 * @returns {boolean} whether a notebook was found to insert into
 */
export function insertCell(from, source) {
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
    mimeData: { hasData: (/** @type {string} */ type) => type === mime, getData: () => cells, types: () => [mime] },
    proposedAction: "copy", supportedActions: "copy", dropAction: "none", source: null,
    clientX: 0, clientY: 0,
  });
  next?.classList.add("jp-mod-dropTarget");
  target.dispatchEvent(drop);
  next?.classList.remove("jp-mod-dropTarget"); // the notebook removes it; a page without one may not
  return true;
}

/**
 * A tool's name as people read it: an MCP tool `mcp__<server>__<tool>` says which
 * server it belongs to ("get_current_time · MCP time"); other names are as is.
 * @param {string} name
 */
export function toolLabel(name) {
  if (!name.startsWith("mcp__")) return name;
  const rest = name.slice("mcp__".length);
  const cut = rest.indexOf("__");
  if (cut <= 0 || cut + 2 >= rest.length) return name;
  return `${rest.slice(cut + 2)} · MCP ${rest.slice(0, cut)}`;
}

/**
 * One paused tool call: what it would run, and Approve / Always allow / Deny
 * (with an optional reason for the model; Enter in it denies). The box disables
 * itself once answered, so a double click sends one answer.
 * @param {{id: string, title: string, input: string, alwaysTitle: string}} call
 * @param {(answer: {approve: boolean, always: boolean, reason: string}) => void} onAnswer
 * @param {AbortSignal} signal
 * @returns {HTMLElement}
 */
export function approvalBox(call, onAnswer, signal) {
  const box = element("div", "mentra-approval");
  box.dataset.id = call.id;
  box.append(element("div", "mentra-name", call.title), codeText("", call.input));
  const approve = button("mentra-approve", "Approve", "accept");
  const always = button("mentra-always", "Always allow", "reject");
  always.title = call.alwaysTitle;
  const reason = /** @type {HTMLInputElement} */ (element("input", "jp-mod-styled mentra-reason"));
  reason.placeholder = "reason for the model (optional)";
  const deny = button("mentra-deny", "Deny", "warn");
  /** @param {boolean} approved @param {boolean} alwaysAllow */
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

/**
 * Subscribe `handler`s to model events; returns a function that unsubscribes them all.
 * @param {Events} model
 * @param {[string, (...args: any[]) => void][]} subscriptions
 */
export function subscribe(model, subscriptions) {
  for (const [event, handler] of subscriptions) model.on(event, handler);
  return () => {
    for (const [event, handler] of subscriptions) model.off(event, handler);
  };
}

/**
 * A link that scrolls the notebook to cell `id` (a deleted cell's is disabled).
 * @param {string} id
 * @param {string} label
 */
export function cellLink(id, label) {
  const link = button("mentra-cell-link", label, "minimal");
  link.dataset.cell = id;
  link.title = `Scroll to cell ${id}`;
  link.addEventListener("click", () => {
    const node = /** @type {HTMLElement|null} */ (document.querySelector(`[data-mentra-cell-id="${CSS.escape(id)}"]`));
    if (!node) {
      link.title = `cell ${id} is not in the notebook any more`;
      return;
    }
    node.scrollIntoView({ block: "center" });
    node.classList.add("mentra-cell-flash");
    setTimeout(() => node.classList.remove("mentra-cell-flash"), 1200);
  });
  return link;
}
