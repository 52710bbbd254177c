// Saved notebooks and the live views they held (issues 15.7 and 30).
//
// A cell that shows a live view holds a widget output whose model lives only in
// the kernel; the conversation itself is in the markdown output just above the
// widget (agent_view.py), which reads well everywhere else. A file reopened with a
// new kernel rendered such a widget output as "model not found" (or a red icon),
// and with No Kernel as "Loading widget…" for ever. So, when the notebook is
// saved, the page (1) writes each view's current copy into its outputs
// (refreshSavedCopies), (2) leaves our widget outputs out of the file, keeping each
// in the metadata of the markdown that stands for it (withoutLiveViews), and (3)
// drops the placeholder widget state an earlier version saved for them. A page
// reloaded while the kernel still holds the views puts their widgets back
// (reattachLiveViews).

/**
 * @typedef {{model_name: string, model_module: string, model_module_version: string,
 *   state: Record<string, unknown>}} SavedModel
 * @typedef {{version_major?: number, version_minor?: number, state?: Record<string, SavedModel>}} WidgetState
 */

export const STATE_MIME = "application/vnd.jupyter.widget-state+json";
export const VIEW_MIME = "application/vnd.jupyter.widget-view+json";
export const PLACEHOLDER_ESM = "// mentra-nb: this view was live in a kernel; the markdown above it is its saved form\nexport default { render() {} };\n";

/**
 * Whether a saved model is one of our views: a live one's state (every view syncs
 * `_mentra_view`, "agent", "team", "picker" or "batch": mentra_nb/notebook/_widget.py), or a
 * placeholder. Another anywidget's state is never touched.
 * @param {SavedModel} saved
 */
export function isOurs(saved) {
  const state = saved?.state ?? {};
  return saved?.model_module === "anywidget" &&
    (state._esm === PLACEHOLDER_ESM || (typeof state._mentra_view === "string" && state._mentra_view !== ""));
}

/**
 * The notebook's widget metadata with a placeholder for each of our views that an
 * output of the notebook shows (`shown`: the model ids in its widget outputs), and
 * none for views no output shows any more; other widgets' saved state is kept as
 * it was. Null when there is nothing of ours to write or remove.
 * @param {{[STATE_MIME]?: WidgetState}|undefined} metadata the notebook's `widgets` metadata
 * @param {WidgetState} live the widget manager's state of every model it holds
 * @param {Set<string>} shown
 */
export function placeholderMetadata(metadata, live, shown) {
  const saved = metadata?.[STATE_MIME] ?? {};
  /** @type {Record<string, SavedModel>} */
  const state = {};
  let changed = false;
  for (const [id, model] of Object.entries(saved.state ?? {})) {
    if (isOurs(model) && !shown.has(id)) changed = true;
    else state[id] = model;
  }
  for (const [id, model] of Object.entries(live.state ?? {})) {
    if (!isOurs(model) || !shown.has(id)) continue;
    const s = model.state;
    state[id] = {
      model_name: model.model_name, model_module: model.model_module,
      model_module_version: model.model_module_version,
      state: {
        _model_name: s._model_name, _model_module: s._model_module,
        _model_module_version: s._model_module_version, _view_name: s._view_name,
        _view_module: s._view_module, _view_module_version: s._view_module_version,
        _esm: PLACEHOLDER_ESM, _css: "",
      },
    };
    changed = true;
  }
  if (!changed) return null;
  return { ...(metadata ?? {}), [STATE_MIME]: {
    version_major: saved.version_major ?? live.version_major ?? 2,
    version_minor: saved.version_minor ?? live.version_minor ?? 0,
    state,
  } };
}

/**
 * @typedef {{getMetadata(key: string): any, setMetadata(key: string, value: any): void, collaborative?: boolean,
 *   cells: Iterable<{outputs?: {length: number, get(i: number): {data: Record<string, any>},
 *     set?(i: number, output: object): void}}>}} NotebookModel
 * @typedef {{saveState: {connect(fn: (sender: unknown, state: string) => void): void},
 *   model: NotebookModel, save?: () => Promise<void>}} DocumentContext
 * @typedef {{context?: DocumentContext, get_state_sync(options: {drop_defaults: boolean}): WidgetState}} Manager
 */

// Each view's bundle has its own copy of this module; the mark on the document's
// context (a registered symbol, the same in every copy) hooks each notebook once.
const HOOKED = Symbol.for("mentra-nb.placeholders-on-save");

/**
 * Save the notebook of `manager` readable without a kernel (the module's comment)
 * whenever it is saved, and put back the live views a save left out once their
 * models are restored. Only where the manager is JupyterLab's or Notebook 7's (it
 * has the document's context); elsewhere (VS Code, Colab, a static page) nothing
 * happens.
 * @param {Manager|undefined} manager
 */
export function hookNotebookSaves(manager) {
  const context = manager?.context;
  if (!manager || !context?.saveState?.connect || typeof context.model?.setMetadata !== "function") return;
  scheduleReattach(manager);
  if (/** @type {any} */ (context)[HOOKED]) return;
  /** @type {any} */ (context)[HOOKED] = true;
  // What the page saves: the notebook without our live widgets (see withoutLiveViews).
  const notebook = /** @type {any} */ (context.model);
  /** @type {WidgetState|null} the models' state while a save runs */
  let saving = null;
  if (typeof notebook.toJSON === "function") {
    const toJSON = notebook.toJSON.bind(notebook);
    notebook.toJSON = () => (saving ? withoutLiveViews(toJSON(), saving) : toJSON());
  }
  context.saveState.connect((_sender, state) => {
    saving = null;
    if (state !== "started") return; // before the notebook is serialised
    try {
      const notebook = context.model;
      const live = manager.get_state_sync({ drop_defaults: true });
      saving = live;
      if (writesSharedOutputs(notebook)) refreshSavedCopies(notebook, live);
      // The file shows none of our widgets (withoutLiveViews): no placeholder is
      // needed for them, and a notebook saved by an earlier version loses its own.
      const metadata = placeholderMetadata(notebook.getMetadata("widgets"), live, new Set());
      if (metadata) notebook.setMetadata("widgets", metadata);
    } catch (error) {
      console.warn("mentra-nb: could not save placeholders for the live views", error);
    }
  });
}

/**
 * Bring the saved copy of each live view of ours up to date from the kernel's
 * `saved_copy` (mentra_nb/notebook/_widget.py): a full view's markdown output just
 * above its widget, and an ended turn's output, which becomes its transcript as
 * the kernel's own update would have made it. The kernel's display updates reach
 * only outputs this page received (after a reload, the outputs read from the file
 * carry no display id), so without this a reloaded page saved stale copies.
 * @param {NotebookModel} notebook
 * @param {WidgetState} live the widget manager's state of every model it holds
 * @returns {number} how many outputs were written
 */
export function refreshSavedCopies(notebook, live) {
  let written = 0;
  for (const cell of notebook.cells) {
    const outputs = cell.outputs;
    for (let i = 0; outputs && i < outputs.length; i++) {
      const model = live.state?.[outputs.get(i).data?.[VIEW_MIME]?.model_id];
      /** @type {Record<string, any>} */
      const state = model?.state ?? {};
      /** @type {Record<string, string>|undefined} */
      const copy = state.saved_copy;
      if (!model || !isOurs(model) || typeof copy?.["text/markdown"] !== "string") continue;
      const output = { output_type: "display_data", metadata: {}, data: copy };
      if (state.scope?.kind === "turn") {
        outputs.set?.(i, output);
        written++;
        continue;
      }
      // (a full view's copy is the output just above its widget's)
      const above = i > 0 ? outputs.get(i - 1).data : undefined;
      if (above && !above[VIEW_MIME] && above["text/markdown"] !== copy["text/markdown"]) {
        outputs.set?.(i - 1, output);
        written++;
      }
    }
  }
  return written;
}

// Reopened with a new kernel, a widget output whose model is gone shows an error
// (or a red icon), and with No Kernel "Loading widget…" for ever: JupyterLab's
// widget renderer shows that before it even looks for the model. So the saved file
// holds no widget output of ours: a live view's widget output is left out (its
// markdown copy above it is what the file keeps) and a running turn's keeps only
// its markdown. Each keeps the widget output it stood for in its metadata, and a
// page reloaded while the kernel still holds the view puts the widget back
// (reattachLiveViews), as it was before a save.
export const TAG = "mentra";

// The `text/plain` line of a live view's widget output, under its markdown copy
// (mentra_nb/notebook/_widget.py `_display_with_fallback`), and of a turn view's.
const COPIED_LABEL = /^(AgentView|TeamView|SubagentPickerView|BatchView)\(.*\) · live view; /;
const TURN_LABEL = /^AgentView\([^)]*, turn \d+/;

/**
 * Whether a serialised widget output is one of our live views', and which kind:
 * "copied" (a full view, team, picker or batch view, whose markdown copy is the output just
 * above it) or "turn" (a turn view, whose own bundle holds its markdown). Known by
 * the model's state while it lives, else (its kernel gone) by the output's line.
 * @param {any} output
 * @param {WidgetState} live
 */
function liveViewKind(output, live) {
  const data = output?.data;
  if (!data?.[VIEW_MIME]) return "";
  const model = live.state?.[data[VIEW_MIME].model_id];
  if (model && isOurs(model)) {
    return /** @type {any} */ (model.state).scope?.kind === "turn" ? "turn" : "copied";
  }
  const plain = [data["text/plain"] ?? ""].flat().join("");
  return COPIED_LABEL.test(plain) ? "copied" : TURN_LABEL.test(plain) ? "turn" : "";
}

/**
 * The notebook's JSON as it is saved: our live views' widget outputs left out
 * (each kept in the metadata of the markdown that stands for it).
 * @param {any} json a notebook as nbformat JSON
 * @param {WidgetState} [live] the widget manager's state of the models it holds
 */
export function withoutLiveViews(json, live = {}) {
  for (const cell of json?.cells ?? []) {
    const outputs = cell.outputs;
    if (!Array.isArray(outputs)) continue;
    const kept = [];
    for (const output of outputs) {
      const above = kept[kept.length - 1];
      const kind = liveViewKind(output, live);
      if (kind === "copied" && above && !above.data?.[VIEW_MIME]) {
        above.metadata = { ...(above.metadata ?? {}), [TAG]: { view: output } };
      } else if (kind === "turn") {
        const { [VIEW_MIME]: _view, ...data } = output.data;
        kept.push({ ...output, data, metadata: { ...(output.metadata ?? {}), [TAG]: { view: output } } });
      } else {
        kept.push(output);
      }
    }
    cell.outputs = kept;
  }
  return json;
}

const REATTACH = Symbol.for("mentra-nb.reattach");

/**
 * Whether this page may change outputs it did not receive from the kernel itself
 * (write saved copies, put widgets back). Always, unless the notebook is shared
 * (real-time collaboration): then only the collaborator with the lowest client id
 * (Yjs awareness), since two pages replacing the same output at once leave both
 * replacements in the shared document.
 * @param {any} notebook the document's model
 */
export function writesSharedOutputs(notebook) {
  const awareness = notebook?.sharedModel?.awareness;
  if (!notebook?.collaborative || !awareness?.getStates) return true;
  return Math.min(...awareness.getStates().keys()) === awareness.clientID;
}

/**
 * Once the views' models have been restored (a page reload while the kernel
 * runs), put back the widget outputs a save left out, for the models the kernel
 * still holds; a new kernel holds none of them, so a reopened notebook keeps
 * its markdown.
 * @param {Manager} manager
 */
function scheduleReattach(manager) {
  const context = /** @type {any} */ (manager.context);
  if (context[REATTACH] || !writesSharedOutputs(context.model)) return;
  context[REATTACH] = setTimeout(() => {
    context[REATTACH] = 0;
    reattachLiveViews(manager).catch((error) => console.warn("mentra-nb: could not restore a live view", error));
  }, 0);
}

/**
 * @param {Manager} manager
 * @returns {Promise<number>} how many widget outputs were put back
 */
export async function reattachLiveViews(manager) {
  let restored = 0;
  for (const cell of /** @type {any} */ (manager.context)?.model?.cells ?? []) {
    const outputs = cell.outputs;
    if (!outputs) continue;
    const list = [];
    let changed = false;
    for (let i = 0; i < outputs.length; i++) {
      const output = outputs.get(i).toJSON();
      const view = output.metadata?.[TAG]?.view;
      const live = view && await isLive(manager, view.data?.[VIEW_MIME]?.model_id);
      if (!live) {
        list.push(output);
        continue;
      }
      const { [TAG]: _tag, ...metadata } = output.metadata;
      if (liveViewKind(view, {}) === "turn") {
        list.push(view); // a running turn: its widget again
      } else {
        list.push({ ...output, metadata }, view);
      }
      changed = true;
      restored++;
    }
    if (changed) {
      outputs.clear();
      for (const output of list) outputs.add(output);
    }
  }
  return restored;
}

/**
 * @param {Manager} manager
 * @param {string|undefined} id
 */
async function isLive(manager, id) {
  if (!id) return false;
  try {
    const model = await /** @type {any} */ (manager).get_model(id);
    return Boolean(model?.comm_live);
  } catch {
    return false;
  }
}

// A notebook's agents belong to the notebook, not its file name
// (mentra_nb/notebook/_notebook_identity.py): the kernel gives each AgentView the
// runtime id and state file its agents are kept under, and the notebook's metadata
// keeps them, so a kernel finds them again after the notebook was renamed or moved.
export const IDENTITY_KEY = "mentra";

/**
 * Write `identity` ({id, state}) into the notebook's metadata if it says something
 * else, and save the notebook at once (saveNow): a kernel restarted before the next
 * autosave reads the notebook from disk. Where the manager has no document (VS
 * Code, a static page) nothing happens.
 * @param {Manager|undefined} manager
 * @param {{id?: string, state?: string}|undefined} identity
 * @returns {boolean} whether the metadata was written
 */
export function keepNotebookIdentity(manager, identity) {
  const context = manager?.context;
  const notebook = context?.model;
  if (!identity?.id || typeof notebook?.setMetadata !== "function") return false;
  const kept = notebook.getMetadata(IDENTITY_KEY);
  if (kept?.id === identity.id && kept?.state === (identity.state ?? "")) return false;
  notebook.setMetadata(IDENTITY_KEY, { ...(kept ?? {}), id: identity.id, state: identity.state ?? "" });
  saveNow(context, "the notebook's agent id");
  return true;
}

/**
 * Save the notebook from the page now, unless it is shared (real-time
 * collaboration). There the server saves the shared document on its own a moment
 * after each change, so what the page just wrote is on disk soon anyway, and a
 * save from the page only races it: the page first compares the file on disk
 * with the version it last heard of, and a server save it had not heard of yet
 * made JupyterLab ask "File Changed" (overwrite or revert?) about the notebook's
 * own autosave.
 * @param {{model?: {collaborative?: boolean}, save?: () => Promise<void>}|undefined} context
 * @param {string} what what the save keeps, for the warning when it fails
 */
export function saveNow(context, what) {
  if (!context?.save || context.model?.collaborative) return;
  context.save().catch((/** @type {unknown} */ error) => console.warn(`mentra-nb: could not save ${what}`, error));
}
