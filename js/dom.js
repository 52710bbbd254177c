// Shared DOM helpers of the mentra-nb widgets. Each widget imports them;
// `npm run build` bundles them into each widget's single module in
// mentra_nb/static/ (anywidget loads one module, where relative imports cannot resolve).

/**
 * @typedef {{index: number, role: string, kind: string, html?: string, id?: string, name?: string,
 *   input?: string, content?: string, truncated?: boolean, is_error?: boolean, media_type?: string, data?: string}} Item
 * @typedef {{
 *   get(name: string): any,
 *   on(event: string, handler: (...args: any[]) => void): void,
 *   off(event: string, handler: (...args: any[]) => void): void,
 *   send(content: object): void,
 * }} Model
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
 * Render the committed transcript. Tool results are shown inside the
 * collapsible block of the call they answer.
 * @param {HTMLElement} container
 * @param {Item[]} items
 */
export function renderTranscript(container, items) {
  container.replaceChildren();
  appendTranscript(container, items, new Map());
}

/**
 * Append items to a rendered transcript. `calls` maps the tool calls rendered
 * so far to their blocks, so a later result finds its call.
 * @param {HTMLElement} container
 * @param {Item[]} items
 * @param {Map<string, HTMLElement>} calls
 */
export function appendTranscript(container, items, calls) {
  for (const item of items) {
    if (item.kind === "tool_result") {
      const result = element("pre", item.is_error ? "mentra-error" : "", item.content ?? "");
      const host = item.id ? calls.get(item.id) : undefined;
      if (host) {
        host.append(result);
        if (item.is_error) host.classList.add("mentra-error");
      } else {
        const orphan = element("div", "mentra-item mentra-tool");
        orphan.dataset.role = item.role;
        orphan.dataset.index = String(item.index);
        orphan.append(result);
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
      const img = /** @type {HTMLImageElement} */ (element("img"));
      img.src = `data:${item.media_type};base64,${item.data}`;
      img.style.maxWidth = "100%";
      node.append(img);
    }
    container.append(node);
  }
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
  box.append(element("div", "mentra-name", call.title), element("pre", "", call.input));
  const approve = /** @type {HTMLButtonElement} */ (element("button", "mentra-approve", "Approve"));
  const always = /** @type {HTMLButtonElement} */ (element("button", "mentra-always", "Always allow"));
  always.title = call.alwaysTitle;
  const reason = /** @type {HTMLInputElement} */ (element("input", "mentra-reason"));
  reason.placeholder = "reason for the model (optional)";
  const deny = /** @type {HTMLButtonElement} */ (element("button", "mentra-deny", "Deny"));
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
 * @param {Model} model
 * @param {[string, (...args: any[]) => void][]} subscriptions
 */
export function subscribe(model, subscriptions) {
  for (const [event, handler] of subscriptions) model.on(event, handler);
  return () => {
    for (const [event, handler] of subscriptions) model.off(event, handler);
  };
}
