// Live views for every collaborator (issue 36.3).
//
// With real-time collaboration (jupyter-collaboration), the outputs of a cell that
// someone else ran reach this page through the shared document, and JupyterLab
// makes them untrusted here (jupyterlab/jupyterlab#11435: trust is not shared). An
// untrusted output never renders a widget (the widget renderer is not "safe"), so
// a collaborator saw the output's markdown — "idle", "turn 1 · running…" — and no
// Stop, until a reload. Yet this page's kernel connection received every comm
// message the kernel sent (IOPub goes to every client), so its widget manager
// holds the live models. This module trusts each such output that shows one of
// our views, live in this page's kernel, and renders it again: the view comes up
// from this page's own model, streaming and taking clicks.
//
// Only that output, and only here: trusting the cell (`cell.trusted = true`, what
// "Trust Notebook" does) rewrites every output of the cell in the shared document,
// which broke the runner's display updates (its turn ended as two copies of the
// cell's result). So the output's own model is marked trusted and the output area
// told to render it again (its `stateChanged` signal, which writes nothing): the
// shared document is never changed.
//
// Why that is safe: what renders is our view, from a model the kernel this page
// runs created (a model restored from a file's metadata has no live comm), and
// the output holds nothing but it and its text (plain text and the kernel's
// markdown, whose raw HTML it escaped: mentra_nb/_inert_markdown.py). Any other
// output keeps the trust JupyterLab gave it.

import { VIEW_MIME, refreshSavedCopies, writesSharedOutputs } from "./saved_state.js";

/**
 * @typedef {{trusted: boolean, data: Record<string, unknown>}} OutputModel
 * @typedef {{length: number, get(i: number): OutputModel,
 *   stateChanged?: {emit?(index: number): void}}} Outputs
 * @typedef {{get_model(id: string): Promise<any>, context?: {model?: {cells?: Iterable<{outputs?: Outputs}>,
 *   contentChanged?: {connect(fn: () => void): void}}}}} Manager
 */

// What an output of our view holds besides the view.
const TEXT_MIMES = new Set(["text/plain", "text/markdown"]);
// A notebook is checked at most this often while its content changes (a streaming
// cell of someone else's changes it many times a second).
const CHECK_EVERY_MS = 250;

/**
 * The model id of the widget `data` shows when it holds nothing else but text,
 * else "".
 * @param {Record<string, unknown>} data
 */
export function viewOnly(data) {
  const view = /** @type {{model_id?: unknown}|undefined} */ (data[VIEW_MIME]);
  if (!view || typeof view.model_id !== "string") return "";
  return Object.keys(data).every((mime) => mime === VIEW_MIME || TEXT_MIMES.has(mime)) ? view.model_id : "";
}

/**
 * Whether model `id` is one of our views, live in the kernel `manager` speaks to.
 * @param {Manager} manager
 * @param {string} id
 */
async function isOurLiveView(manager, id) {
  try {
    const model = await manager.get_model(id);
    const view = model?.get?.("_mentra_view");
    return Boolean(model?.comm_live) && typeof view === "string" && view !== "";
  } catch {
    return false; // (not in this kernel: "widget model not found")
  }
}

/**
 * Trust each untrusted output that shows one of our live views and render it
 * again (the module's comment).
 * @param {Manager} manager
 * @returns {Promise<number>} how many outputs were trusted
 */
export async function trustSharedViews(manager) {
  let trusted = 0;
  for (const cell of manager.context?.model?.cells ?? []) {
    const outputs = cell.outputs;
    for (let i = 0; outputs && i < outputs.length; i++) {
      const output = outputs.get(i);
      const id = output.trusted ? "" : viewOnly(output.data ?? {});
      if (!id || !(await isOurLiveView(manager, id)) || outputs.get(i) !== output) continue;
      output.trusted = true;
      outputs.stateChanged?.emit?.(i);
      trusted++;
    }
  }
  return trusted;
}

/**
 * What each of our views does in every page where its model is created (its
 * `initialize`): show live views to collaborators, and keep the shared document's
 * saved copies current.
 * @param {any} model
 */
export function shareLiveViews(model) {
  showViewsToCollaborators(model.widget_manager);
  keepSharedCopies(model, model.widget_manager);
}

// The shared document is what the server saves (on its own, a second after each
// change). The kernel keeps a view's saved copy current by display updates, which
// reach only the page that ran the cell while it stays open; the page's save hook
// writes the rest (saved_state.js refreshSavedCopies), but the server's saves run
// no page's hook. So with collaboration on, one page (saved_state.js
// writesSharedOutputs) writes a view's new copy into the shared document when
// the kernel sets it: the turn that ended after its runner reloaded, the
// spawn cell's copy. It waits a moment first: the runner's own display update
// usually lands meanwhile, and a copy already current is not written again.
const SETTLE_MS = 1000;

/**
 * @param {any} model one of our views' widget model
 * @param {any} manager its widget manager
 */
export function keepSharedCopies(model, manager) {
  const notebook = manager?.context?.model;
  if (!notebook?.collaborative || typeof model?.on !== "function") return;
  model.on("change:saved_copy", () => {
    setTimeout(() => {
      if (!writesSharedOutputs(notebook)) return;
      try {
        refreshSavedCopies(notebook, manager.get_state_sync({ drop_defaults: true }));
      } catch (error) {
        console.warn("mentra-nb: could not write a view's saved copy", error);
      }
    }, SETTLE_MS);
  });
}

const WATCHED = Symbol.for("mentra-nb.shared-views");

/**
 * Trust the outputs that show our live views now, and again whenever the notebook
 * changes (a collaborator's output arrives after, or before, its model does:
 * each new model of ours calls this again). Once per notebook and page; where
 * the manager has no document (VS Code, Colab, a static page) nothing happens.
 * @param {Manager|undefined} manager
 */
export function showViewsToCollaborators(manager) {
  const notebook = /** @type {any} */ (manager?.context?.model);
  if (!manager || !notebook?.cells) return;
  const check = () => {
    notebook[WATCHED].due = 0;
    trustSharedViews(manager).catch((error) => console.warn("mentra-nb: could not show a shared view", error));
  };
  const schedule = () => {
    if (!notebook[WATCHED].due) notebook[WATCHED].due = setTimeout(check, CHECK_EVERY_MS);
  };
  if (!notebook[WATCHED]) {
    notebook[WATCHED] = { due: 0 };
    notebook.contentChanged?.connect(schedule);
  }
  schedule();
}
