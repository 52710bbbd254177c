// The marks of the cells an agent touched (issue 29): a badge in each cell whose
// metadata names an agent (js/cell_bridge.js writes it), and links from a turn's
// tool calls to the cells they changed.
//
// The widget manager gives our views the notebook's model, not its widgets, so the
// badges are put on the cells' DOM nodes, found in the notebook node that holds one
// of our views, in the model's order (a windowed notebook numbers its rendered
// cells: data-windowed-list-index). Each cell node also gets its cell id
// (data-mentra-cell-id), which is how a link finds the cell to scroll to.

import { MARK_KEY } from "./cell_bridge.js";
export const CELL_TOOLS = new Set(["insert_cell", "edit_cell", "run_cell", "delete_cell"]);

/**
 * Keep the badges of the notebook around `el` (a view of ours) current until `signal` aborts.
 * @param {any} manager the widget manager (JupyterLab's or Notebook 7's has the document)
 * @param {HTMLElement} el
 * @param {AbortSignal} signal
 */
export function hookCellMarks(manager, el, signal) {
  const notebook = manager?.context?.model;
  if (!notebook?.cells || typeof notebook.sharedModel?.changed?.connect !== "function") return;
  let frame = 0;
  const refresh = () => {
    if (frame || signal.aborted) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const node = el.isConnected ? el.closest(".jp-Notebook") : null;
      if (node) markCells(notebook, /** @type {HTMLElement} */ (node));
    });
  };
  // The notebook's changes: its cell list (sharedModel.changed) and any cell's content,
  // a mark in its metadata included (contentChanged); and its cell nodes made again
  // (a windowed notebook renders cells as they scroll into view).
  notebook.sharedModel.changed.connect(refresh);
  notebook.contentChanged?.connect(refresh);
  const observer = new MutationObserver(refresh);
  requestAnimationFrame(() => { // once the view is in the page
    const node = el.closest(".jp-Notebook");
    for (const target of [node, node?.querySelector(".jp-WindowedPanel-viewport")]) {
      if (target && !signal.aborted) observer.observe(target, { childList: true });
    }
    refresh();
  });
  signal.addEventListener("abort", () => {
    notebook.sharedModel.changed.disconnect(refresh);
    notebook.contentChanged?.disconnect(refresh);
    observer.disconnect();
  });
}

/**
 * Put a badge on each cell node whose model's metadata names an agent, remove it
 * from the others, and tag each with its cell id.
 * @param {any} notebook
 * @param {HTMLElement} root the `.jp-Notebook` node
 */
export function markCells(notebook, root) {
  const nodes = /** @type {HTMLElement[]} */ ([...root.querySelectorAll(".jp-Cell")]);
  nodes.forEach((node, position) => {
    const index = node.dataset.windowedListIndex !== undefined ? Number(node.dataset.windowedListIndex) : position;
    const cell = index < notebook.cells.length ? notebook.cells.get(index) : null;
    if (!cell) return;
    node.dataset.mentraCellId = cell.id;
    const mark = cell.getMetadata?.(MARK_KEY);
    let badge = /** @type {HTMLElement|null} */ (node.querySelector(":scope .mentra-cell-badge"));
    if (!mark || typeof mark.agent !== "string") {
      badge?.remove();
      return;
    }
    const text = `✦ ${mark.agent}`;
    const title = `changed or run by agent ${mark.agent} in its run ${mark.run}`;
    if (!badge) {
      badge = document.createElement("div");
      badge.className = "mentra-cell-badge";
      (node.querySelector(".jp-Cell-inputWrapper") ?? node).append(badge);
    }
    if (badge.textContent !== text) badge.textContent = text;
    if (badge.title !== title) badge.title = title;
  });
}

/**
 * The cell a cell tool's call changed, from its input (edit, run, delete) or its
 * result (insert: "inserted code cell <id> …").
 * @param {string} name
 * @param {string} input the call's input as JSON
 * @param {string} result
 * @returns {string} "" when none
 */
export function changedCell(name, input, result) {
  if (!CELL_TOOLS.has(name)) return "";
  if (name === "insert_cell") return /^inserted \w+ cell (\S+)/.exec(result)?.[1] ?? "";
  try {
    const cell = JSON.parse(input)?.cell;
    return typeof cell === "string" ? cell : "";
  } catch {
    return "";
  }
}
