import { describe, expect, it } from "vitest";
import { IDENTITY_KEY, PLACEHOLDER_ESM, STATE_MIME, VIEW_MIME, isOurs, keepNotebookIdentity, placeholderMetadata, hookNotebookSaves,
  refreshSavedCopies } from "./saved_state.js";

const anywidget = (state) => ({ model_name: "AnyModel", model_module: "anywidget", model_module_version: "~0.9.*",
  state: { _model_name: "AnyModel", _model_module: "anywidget", _model_module_version: "~0.9.*",
    _view_name: "AnyView", _view_module: "anywidget", _view_module_version: "~0.9.*",
    layout: "IPY_MODEL_layout1", _esm: "export default {} // 60 KB of view", ...state } });
const slider = { model_name: "IntSliderModel", model_module: "@jupyter-widgets/controls",
  model_module_version: "2.0.0", state: { value: 3 } };

describe("placeholderMetadata", () => {
  it("saves a small placeholder for each of our views an output shows, and keeps other widgets' state", () => {
    const live = { version_major: 2, version_minor: 0, state: {
      full: anywidget({ _mentra_view: "agent", agent_name: "writer", scope: {} }),
      unshown: anywidget({ _mentra_view: "agent", agent_name: "writer", scope: { kind: "turn", first: 2 } }),
      team: anywidget({ _mentra_view: "team", lead: { name: "lead" }, members: [] }),
      picker: anywidget({ _mentra_view: "picker", root_name: "root", options: [] }),
      other: anywidget({ count: 1 }),
    } };
    const metadata = placeholderMetadata({ [STATE_MIME]: { version_major: 2, version_minor: 0,
      state: { slider } } }, live, new Set(["full", "team", "picker", "other"]));
    const state = metadata[STATE_MIME].state;
    expect(Object.keys(state).sort()).toEqual(["full", "picker", "slider", "team"]);
    expect(state.team.state._esm).toBe(PLACEHOLDER_ESM);
    expect(state.team.state.members).toBeUndefined();
    expect(state.picker.state._esm).toBe(PLACEHOLDER_ESM);
    expect(state.picker.state.options).toBeUndefined();
    expect(state.slider).toEqual(slider);
    expect(state.full.state._esm).toBe(PLACEHOLDER_ESM);
    expect(state.full.state.layout).toBeUndefined(); // no reference to a model not saved
    expect(state.full.state.agent_name).toBeUndefined(); // nothing of the conversation
    expect(state.full.state._view_name).toBe("AnyView");
  });

  it("drops the placeholders of views no output shows any more, and leaves a notebook without ours alone", () => {
    const saved = { [STATE_MIME]: { state: { old: { ...anywidget({}), state: { _esm: PLACEHOLDER_ESM } }, slider } } };
    expect(placeholderMetadata(saved, { state: {} }, new Set())[STATE_MIME].state).toEqual({ slider });
    expect(placeholderMetadata(undefined, { state: { slider } }, new Set(["slider"]))).toBeNull();
    // A placeholder restored from the file and still shown is written again.
    const restored = { state: { old: saved[STATE_MIME].state.old } };
    expect(placeholderMetadata(saved, restored, new Set(["old"]))[STATE_MIME].state.old.state._esm)
      .toBe(PLACEHOLDER_ESM);
  });
});

describe("isOurs", () => {
  it("knows our views by their marker trait or a placeholder, and nobody else's", () => {
    for (const view of ["agent", "team", "picker"]) expect(isOurs(anywidget({ _mentra_view: view }))).toBe(true);
    expect(isOurs({ ...anywidget({}), state: { _esm: PLACEHOLDER_ESM } })).toBe(true);
    // Another anywidget, even one whose traits look like ours, is left alone.
    expect(isOurs(anywidget({ agent_name: "writer", scope: {} }))).toBe(false);
    expect(isOurs(anywidget({ _mentra_view: "" }))).toBe(false);
    expect(isOurs({ ...slider, state: { _mentra_view: "agent" } })).toBe(false); // not an anywidget
    expect(isOurs(undefined)).toBe(false);
  });
});

describe("hookNotebookSaves", () => {
  it("at a save: leaves our widget outputs out of the file, and drops old placeholders, once per notebook", () => {
    const handlers = [];
    let written = null;
    const cells = [{ outputs: [
      { output_type: "display_data", data: { "text/markdown": '<div class="mentra-fallback">\n\ncopy\n\n</div>' } },
      { output_type: "display_data", data: { [VIEW_MIME]: { model_id: "full" }, "text/plain": "AgentView(w) · live view; saved as the markdown above" } },
    ] }, { outputs: [
      { output_type: "display_data", data: { [VIEW_MIME]: { model_id: "turn" }, "text/plain": "AgentView(w, turn 1)",
        "text/markdown": "**w** · turn 1 · *running…*" } },
      { output_type: "display_data", data: { [VIEW_MIME]: { model_id: "slider" }, "text/plain": "IntSlider" } },
    ] }];
    const old = { [STATE_MIME]: { state: { full: { ...anywidget({}), state: { _esm: PLACEHOLDER_ESM } }, slider } } };
    const model = { getMetadata: () => old, setMetadata: (key, value) => { written = [key, value]; },
      cells: [], toJSON: () => structuredClone({ cells, metadata: {} }) };
    const context = { saveState: { connect: (fn) => handlers.push(fn) }, model };
    const manager = { context, get_state_sync: () => ({ state: {} }) };
    hookNotebookSaves(manager);
    hookNotebookSaves(manager);
    expect(handlers).toHaveLength(1);
    expect(model.toJSON().cells[0].outputs).toHaveLength(2); // not saving: as it is
    handlers[0](context, "started");
    expect(written[1][STATE_MIME].state).toEqual({ slider });
    const saved = model.toJSON();
    const [copy] = saved.cells[0].outputs;
    expect(saved.cells[0].outputs).toHaveLength(1);
    expect(copy.metadata.mentra.view.data[VIEW_MIME].model_id).toBe("full");
    const [turn, other] = saved.cells[1].outputs;
    expect(turn.data).toEqual({ "text/plain": "AgentView(w, turn 1)", "text/markdown": "**w** · turn 1 · *running…*" });
    expect(turn.metadata.mentra.view.data[VIEW_MIME].model_id).toBe("turn");
    expect(other.data[VIEW_MIME].model_id).toBe("slider"); // another widget's output is kept
    handlers[0](context, "completed");
    expect(model.toJSON().cells[0].outputs).toHaveLength(2);
  });

  it("leaves a batch view's widget output out by its line when its model is gone", () => {
    const handlers = [];
    const cells = [{ outputs: [
      { output_type: "display_data", data: { "text/markdown": "**Batch job `reviews`** of `clf`: finished" } },
      { output_type: "display_data", data: { [VIEW_MIME]: { model_id: "gone" },
        "text/plain": "BatchView(reviews) · live view; saved as the markdown above" } },
    ] }];
    const model = { getMetadata: () => ({}), setMetadata: () => {}, cells: [],
      toJSON: () => structuredClone({ cells, metadata: {} }) };
    const context = { saveState: { connect: (fn) => handlers.push(fn) }, model };
    hookNotebookSaves({ context, get_state_sync: () => ({ state: {} }) });
    handlers[0](context, "started");
    const [copy, ...rest] = model.toJSON().cells[0].outputs;
    expect(rest).toHaveLength(0);
    expect(copy.data["text/markdown"]).toContain("Batch job");
    handlers[0](context, "completed");
  });

  it("does nothing where the manager has no document (VS Code, a static page)", () => {
    expect(() => hookNotebookSaves(undefined)).not.toThrow();
    expect(() => hookNotebookSaves({ get_state_sync: () => ({}) })).not.toThrow();
  });
});

describe("keepNotebookIdentity", () => {
  const notebookWith = (metadata, collaborative = false) => {
    const saves = [];
    const model = { collaborative, getMetadata: (key) => metadata[key],
      setMetadata: (key, value) => { metadata[key] = value; } };
    return { saves, metadata, manager: { context: { model, save: async () => { saves.push(structuredClone(metadata)); } } } };
  };

  it("writes the kernel's id and state file into the notebook's metadata and saves it, once", async () => {
    const { manager, saves, metadata } = notebookWith({ kernelspec: { name: "python3" } });
    const identity = { id: "Untitled", state: "/work/.mentra/Untitled.sqlite" };
    expect(keepNotebookIdentity(manager, identity)).toBe(true);
    await Promise.resolve();
    expect(metadata[IDENTITY_KEY]).toEqual(identity);
    expect(saves).toHaveLength(1);
    expect(keepNotebookIdentity(manager, { ...identity })).toBe(false); // a second view: nothing to do
    // An adopted runtime replaces the id; other keys under ours are kept.
    metadata[IDENTITY_KEY].note = "kept";
    expect(keepNotebookIdentity(manager, { id: "tour", state: "/work/.mentra/tour.sqlite" })).toBe(true);
    expect(metadata[IDENTITY_KEY]).toEqual({ id: "tour", state: "/work/.mentra/tour.sqlite", note: "kept" });
  });

  it("leaves the saving of a shared notebook to the server (a page's save raced its autosave)", async () => {
    const { manager, saves, metadata } = notebookWith({}, true);
    expect(keepNotebookIdentity(manager, { id: "tour", state: "/work/.mentra/tour.sqlite" })).toBe(true);
    await Promise.resolve();
    expect(metadata[IDENTITY_KEY]).toEqual({ id: "tour", state: "/work/.mentra/tour.sqlite" });
    expect(saves).toHaveLength(0);
  });

  it("does nothing without an id or a document (VS Code, a static page)", () => {
    const { manager, metadata } = notebookWith({});
    expect(keepNotebookIdentity(manager, {})).toBe(false);
    expect(keepNotebookIdentity(manager, undefined)).toBe(false);
    expect(keepNotebookIdentity(undefined, { id: "a", state: "" })).toBe(false);
    expect(keepNotebookIdentity({ context: {} }, { id: "a", state: "" })).toBe(false);
    expect(metadata).toEqual({});
  });
});

describe("refreshSavedCopies", () => {
  const view = (id) => ({ output_type: "display_data", data: { [VIEW_MIME]: { model_id: id }, "text/plain": "AgentView" } });
  const fallback = (text) => ({ output_type: "display_data",
    data: { "text/markdown": `<div class="mentra-fallback">\n\n${text}\n\n</div>`, "text/plain": text } });
  const cellOf = (outputs) => ({ outputs: { get length() { return outputs.length; }, get: (i) => outputs[i],
    set: (i, value) => { outputs[i] = value; } } });

  it("writes each live view's current copy: a full view's markdown above it, an ended turn in its place", () => {
    const spawn = [fallback("**writer** · idle"), view("full")];
    const turn = [view("turn")];
    const running = [view("running")];
    const other = [{ output_type: "stream", text: "hi" }, view("slider")];
    const live = { state: {
      full: anywidget({ _mentra_view: "agent", scope: {}, saved_copy: fallback("**writer** · finished").data }),
      turn: anywidget({ _mentra_view: "agent", scope: { kind: "turn", first: 0 },
        saved_copy: { "text/markdown": "**writer** · turn 1 · finished", "text/plain": "AgentView(writer, turn 1)" } }),
      running: anywidget({ _mentra_view: "agent", scope: { kind: "turn", first: 2 } }),
      slider,
    } };
    const notebook = { cells: [cellOf(spawn), cellOf(turn), cellOf(running), cellOf(other)] };
    expect(refreshSavedCopies(notebook, live)).toBe(2);
    expect(spawn[0].data["text/markdown"]).toContain("finished");
    expect(spawn[1].data[VIEW_MIME]).toEqual({ model_id: "full" }); // the live widget stays
    expect(turn[0].data).toEqual(live.state.turn.state.saved_copy);
    expect(running[0].data[VIEW_MIME]).toEqual({ model_id: "running" }); // no copy yet: left alone
    expect(other[0].text).toBe("hi");
    expect(refreshSavedCopies(notebook, live)).toBe(0); // all current: nothing to write
  });
});
