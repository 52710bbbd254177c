import { describe, expect, it } from "vitest";
import { VIEW_MIME, writesSharedOutputs } from "./saved_state.js";
import { trustSharedViews, viewOnly } from "./shared_views.js";

const view = (id, extra = {}) => ({ [VIEW_MIME]: { model_id: id }, "text/plain": "AgentView(writer)",
  "text/markdown": "**writer**", ...extra });

/** A notebook of one cell holding `outputs` (untrusted unless said), and the renders asked for. */
function page(outputs, models) {
  const rendered = [];
  const items = outputs.map(({ data, trusted = false }) => ({ data, trusted }));
  const cell = { outputs: { length: items.length, get: (i) => items[i], stateChanged: { emit: (i) => rendered.push(i) } } };
  const manager = {
    context: { model: { cells: [cell] } },
    get_model: async (id) => {
      if (!(id in models)) throw new Error("widget model not found");
      return models[id];
    },
  };
  return { manager, items, rendered };
}

const ours = { comm_live: true, get: (key) => (key === "_mentra_view" ? "agent" : undefined) };

describe("viewOnly", () => {
  it("names the model of an output that holds a widget and text only", () => {
    expect(viewOnly(view("m1"))).toBe("m1");
    expect(viewOnly(view("m1", { "text/html": "<b>x</b>" }))).toBe("");
    expect(viewOnly({ "text/markdown": "**writer**" })).toBe("");
  });
});

describe("trustSharedViews", () => {
  it("trusts and renders again each untrusted output of a view of ours live in this kernel", async () => {
    const { manager, items, rendered } = page([
      { data: { "text/markdown": "copy" } },
      { data: view("live") },
      { data: view("gone") }, // (not in this kernel)
      { data: view("slider") }, // (not ours)
      { data: view("closed") }, // (its comm is closed)
      { data: view("mine"), trusted: true }, // (this page ran it)
      { data: view("live", { "text/html": "<img>" }) }, // (more than our view)
    ], { live: ours, slider: { comm_live: true, get: () => undefined }, closed: { ...ours, comm_live: false }, mine: ours });
    expect(await trustSharedViews(manager)).toBe(1);
    expect(items.map((item) => item.trusted)).toEqual([false, true, false, false, false, true, false]);
    expect(rendered).toEqual([1]);
    expect(await trustSharedViews(manager)).toBe(0); // once
  });
});

describe("writesSharedOutputs", () => {
  const shared = (me, others) => ({ collaborative: true, sharedModel: { awareness: {
    clientID: me, getStates: () => new Map([me, ...others].map((id) => [id, {}])) } } });
  it("lets one collaborator of a shared notebook change outputs: the lowest client id", () => {
    expect(writesSharedOutputs(shared(3, [7, 12]))).toBe(true);
    expect(writesSharedOutputs(shared(12, [3, 7]))).toBe(false);
    expect(writesSharedOutputs({ ...shared(12, [3]), collaborative: false })).toBe(true); // (not shared)
    expect(writesSharedOutputs(undefined)).toBe(true);
  });
});
