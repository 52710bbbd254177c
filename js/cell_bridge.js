// The notebook bridge (issue 29): the page's end of mentra_nb/notebook/_cell_bridge.py.
//
// A widget the kernel never displays: the widget manager creates its model as soon
// as the kernel opens the comm, and `initialize` reaches the notebook through the
// manager's document context (as saved_state.js does to write the notebook's
// metadata). It says hello (whether this page can edit cells), then answers the
// kernel's requests: read the live cells, insert, edit, delete, and run a cell as
// Shift-Enter does (an execute request on the notebook's own kernel connection,
// its In [n] and outputs written into the cell).

/**
 * @typedef {{agent: string, run: number}} Mark
 * @typedef {{mime: string, data?: string|null}} Image
 * @typedef {{kind: "stream"|"result"|"display"|"error", text: string, images: Image[]}} Output
 * @typedef {{id: string, kind: string, source: string, execution_count: number|null,
 *   outputs: Output[], mark: Mark|null}} CellJson
 */

import { MARK_KEY, hookCellMarks, onlyNotebook } from "./cell_marks.js";
// The outputs the page sends back for a run are bounded here too: the kernel
// bounds them again for the model, but megabytes need not cross the wire.
const MAX_TEXT = 50_000;
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"];

/** @param {unknown} value */
function joined(value) {
  return Array.isArray(value) ? value.join("") : typeof value === "string" ? value : "";
}

/** @param {string} text */
function bounded(text) {
  return text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT)}\n… [cut by the page]`;
}

/**
 * One nbformat output as the model reads it (images with their data only when asked).
 * @param {any} output
 * @param {boolean} withImages
 * @returns {Output|null}
 */
export function outputJson(output, withImages) {
  const type = output?.output_type;
  if (type === "stream") return { kind: "stream", text: bounded(joined(output.text)), images: [] };
  if (type === "error") {
    // (tracebacks carry terminal colours; the model reads plain text)
    const trace = (output.traceback ?? []).join("\n").replace(/\u001b\[[0-9;]*m/g, "");
    return { kind: "error", text: bounded(`${output.ename}: ${output.evalue}\n${trace}`), images: [] };
  }
  if (type !== "execute_result" && type !== "display_data") return null;
  const data = output.data ?? {};
  const images = IMAGE_TYPES.filter((mime) => mime in data)
    .map((mime) => ({ mime, data: withImages ? joined(data[mime]) : null }));
  return { kind: type === "execute_result" ? "result" : "display", text: bounded(joined(data["text/plain"])), images };
}

/**
 * A cell model of JupyterLab 4 / Notebook 7 as the kernel reads it.
 * @param {any} cell
 * @param {boolean} [withImages]
 * @returns {CellJson}
 */
export function cellJson(cell, withImages = false) {
  const outputs = [];
  for (let i = 0; cell.outputs && i < cell.outputs.length; i++) {
    const output = outputJson(cell.outputs.get(i).toJSON(), withImages);
    if (output) outputs.push(output);
  }
  const mark = cell.getMetadata?.(MARK_KEY);
  return {
    id: cell.id, kind: cell.type, source: cell.sharedModel.getSource(),
    execution_count: cell.type === "code" ? cell.executionCount ?? null : null,
    outputs, mark: mark && typeof mark.agent === "string" ? { agent: mark.agent, run: Number(mark.run) || 0 } : null,
  };
}

/**
 * @param {any} notebook the notebook model
 * @param {string} id
 * @returns {[number, any]}
 */
function findCell(notebook, id) {
  for (let i = 0; i < notebook.cells.length; i++) {
    const cell = notebook.cells.get(i);
    if (cell.id === id) return [i, cell];
  }
  throw new Error(`there is no cell ${JSON.stringify(id)} in the notebook; read_notebook shows the cells`);
}

/** @param {any} cell @param {Mark} mark */
function setMark(cell, mark) {
  cell.setMetadata(MARK_KEY, { agent: mark.agent, run: mark.run });
}

/**
 * Run `cell` as Shift-Enter does (what JupyterLab's CodeCell.execute does, through
 * the public kernel API): its prompt shows [*], its outputs arrive in it, and it
 * gets the execution count of the kernel's reply.
 * @param {any} kernel the notebook's kernel connection
 * @param {any} cell a code cell model
 * @returns {Promise<"ok"|"error"|"aborted">}
 */
export async function runCell(kernel, cell) {
  const code = cell.sharedModel.getSource();
  cell.sharedModel.transact(() => { cell.clearExecution(); }, false);
  cell.executionState = "running";
  cell.trusted = true;
  let clearNext = false;
  const future = kernel.requestExecute({ code, silent: false, store_history: true, stop_on_error: true },
    true, { cellId: cell.id });
  future.onIOPub = (/** @type {any} */ msg) => {
    const type = msg.header.msg_type;
    const content = msg.content;
    if (type === "clear_output") {
      if (content.wait) clearNext = true;
      else cell.outputs.clear();
      return;
    }
    if (!["stream", "display_data", "execute_result", "error"].includes(type)) return;
    if (clearNext) {
      cell.outputs.clear();
      clearNext = false;
    }
    cell.outputs.add({ output_type: type, ...content });
  };
  try {
    const reply = await future.done;
    cell.executionCount = reply?.content?.execution_count ?? null;
    return reply?.content?.status ?? "error";
  } finally {
    cell.executionState = "idle";
  }
}

/**
 * What the bridge does for a request of the kernel.
 * @param {any} context the notebook's document context
 * @param {string} op
 * @param {any} args
 */
export async function handle(context, op, args) {
  const notebook = context.model;
  if (op === "read") {
    const cells = [];
    for (let i = 0; i < notebook.cells.length; i++) cells.push(cellJson(notebook.cells.get(i)));
    return cells;
  }
  if (op === "insert") {
    const index = args.after == null ? notebook.cells.length : findCell(notebook, args.after)[0] + 1;
    notebook.sharedModel.insertCell(index, {
      cell_type: args.kind, source: args.source,
      metadata: { [MARK_KEY]: { agent: args.mark.agent, run: args.mark.run } },
    });
    return cellJson(notebook.cells.get(index));
  }
  const [index, cell] = findCell(notebook, args.cell);
  if (op === "edit") {
    cell.sharedModel.setSource(args.source);
    setMark(cell, args.mark);
    return cellJson(cell);
  }
  if (op === "delete") {
    const before = cellJson(cell);
    notebook.sharedModel.deleteCell(index);
    return before;
  }
  if (op === "run") {
    if (cell.type !== "code") throw new Error(`cell ${args.cell} is a ${cell.type} cell; only code cells run`);
    const kernel = context.sessionContext?.session?.kernel;
    if (!kernel) throw new Error("the notebook has no kernel to run the cell");
    setMark(cell, args.mark);
    const status = await runCell(kernel, cell);
    return { status, cell: cellJson(cell, true) };
  }
  throw new Error(`unknown request ${JSON.stringify(op)}`);
}

/**
 * Whether this page can edit the cells of `context`'s notebook, and why not.
 * @param {any} context
 * @returns {string} "" when it can
 */
export function unavailableReason(context) {
  if (!context) return "this front end gives widgets no notebook document (cells can be edited from JupyterLab 4 or Notebook 7)";
  const notebook = context.model;
  if (typeof notebook?.sharedModel?.insertCell !== "function" || !notebook.cells) {
    return "this front end's notebook model cannot be edited from a widget";
  }
  if (!context.sessionContext) return "this front end gives widgets no kernel session to run cells with";
  return "";
}

/** @param {{model: any}} props */
function initialize({ model }) {
  const context = model.widget_manager?.context;
  const page = Math.random().toString(36).slice(2) + Date.now().toString(36);
  const reason = unavailableReason(context);
  /** @param {any} message */
  const onMessage = (message) => {
    if (message?.kind !== "request" || message.page !== page) return;
    handle(context, message.op, message.args ?? {}).then(
      (result) => model.send({ kind: "reply", id: message.id, ok: true, result }),
      (error) => model.send({ kind: "reply", id: message.id, ok: false, error: String(error?.message ?? error) }));
  };
  model.on("msg:custom", onMessage);
  model.send({ kind: "hello", page, available: !reason, reason });
  // The badges of a reloaded page's marked cells, before any view of ours is shown.
  const marks = new AbortController();
  hookCellMarks(model.widget_manager, onlyNotebook, marks.signal);
  return () => {
    model.off("msg:custom", onMessage);
    marks.abort();
  };
}

export default { initialize };
