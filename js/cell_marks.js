// The marks of the cells an agent touched (issue 29): a badge in each cell whose
// metadata names an agent (js/cell_bridge.js writes it), and links from a turn's
// tool calls to the cells they changed.
//
// The widget manager gives our views the notebook's model, not its widgets, so the
// badges are put on the cells' DOM nodes, found in the notebook node that holds one
// of our views, in the model's order (a windowed notebook numbers its rendered
// cells: data-windowed-list-index). Each cell node also gets its cell id
// (data-mentra-cell-id), which is how a link finds the cell to scroll to.

export const MARK_KEY = "mentra";
export const CELL_TOOLS = new Set(["insert_cell", "edit_cell", "run_cell", "delete_cell"]);

/**
 * Keep the badges of a notebook current until `signal` aborts. `findRoot` finds the
 * notebook's `.jp-Notebook` node (null while the page does not show it).
 * @param {any} manager the widget manager (JupyterLab's or Notebook 7's has the document)
 * @param {() => HTMLElement|null} findRoot
 * @param {AbortSignal} signal
 */
export function hookCellMarks(manager, findRoot, signal) {
  const notebook = manager?.context?.model;
  if (!notebook?.cells || typeof notebook.sharedModel?.changed?.connect !== "function") return;
  let frame = 0;
  let tries = 0;
  /** @type {HTMLElement|null} */
  let observed = null;
  // Cell nodes made again (a windowed notebook renders cells as they scroll into view).
  const observer = new MutationObserver(() => refresh());
  const refresh = () => {
    if (frame || signal.aborted) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const root = findRoot();
      if (!root) {
        // (the page has not shown the notebook yet: look again soon, for a while)
        if (tries++ < 40) setTimeout(refresh, 250);
        return;
      }
      if (root !== observed) {
        observer.disconnect();
        observed = root;
        for (const target of [root, root.querySelector(".jp-WindowedPanel-viewport")]) {
          if (target) observer.observe(target, { childList: true });
        }
      }
      markCells(notebook, root);
    });
  };
  // The notebook's changes: its cell list (sharedModel.changed) and any cell's
  // content, a mark in its metadata included (contentChanged).
  notebook.sharedModel.changed.connect(refresh);
  notebook.contentChanged?.connect(refresh);
  refresh();
  signal.addEventListener("abort", () => {
    notebook.sharedModel.changed.disconnect(refresh);
    notebook.contentChanged?.disconnect(refresh);
    observer.disconnect();
  });
}

/**
 * The page's only notebook, if it shows exactly one (Notebook 7 always does): where
 * the bridge, which has no place in the page, puts the badges. With several open
 * (JupyterLab), each view of ours marks the notebook it is in.
 * @returns {HTMLElement|null}
 */
export function onlyNotebook() {
  const notebooks = document.querySelectorAll(".jp-Notebook");
  return notebooks.length === 1 ? /** @type {HTMLElement} */ (notebooks[0]) : null;
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
