import { beforeEach, describe, expect, it } from "vitest";
import { FakeModel } from "./fake_model.js";
import agentView from "./agent_view.js";
import { forkOriginLabel, forkPoint } from "./time_travel.js";

const { render } = agentView;

const STATE = {
  agent_name: "writer",
  model_key: "test:default",
  status: { name: "finished" },
  run_generation: 2,
  usage: { input_tokens: 1, output_tokens: 1 },
  pending_tools: [],
};
const ITEMS = [
  { index: 0, role: "user", kind: "text", html: "<p>plot <em>it</em></p>" },
  { index: 1, role: "assistant", kind: "tool_use", id: "t1", name: "plot", input: "{}" },
  { index: 2, role: "user", kind: "tool_result", id: "t1", content: "ok" },
  { index: 3, role: "assistant", kind: "text", html: "<p>done</p>" },
];

function opened(state = STATE, items = ITEMS) {
  const el = document.createElement("div");
  document.body.replaceChildren(el);
  const model = new FakeModel(state);
  render({ model, el });
  model.emit("msg:custom", { kind: "items", seq: 1, start: 0, items });
  model.sent.length = 0;
  return { el, model };
}

/** @param {Element} el */
function rows(el) {
  return [...el.querySelectorAll(".mentra-message-actions")].map((row) => ({
    index: Number(/** @type {HTMLElement} */ (row).dataset.index),
    buttons: [...row.querySelectorAll("button")].map((b) => b.textContent),
  }));
}

describe("time travel in the AgentView", () => {
  beforeEach(() => document.body.replaceChildren());

  it("offers Fork from here under every message and Edit under the user's own words", () => {
    const { el } = opened();
    // The tool result shows inside its call's block, so the call's row forks after it.
    expect(rows(el)).toEqual([
      { index: 0, buttons: ["Fork from here", "Edit"] },
      { index: 1, buttons: ["Fork from here"] },
      { index: 3, buttons: ["Fork from here"] },
    ]);
  });

  it("forks where a fork may cut: after a tool call's result, not between them", () => {
    expect(forkPoint(ITEMS, 0)).toBe(1);
    expect(forkPoint(ITEMS, 1)).toBe(3);
    expect(forkPoint(ITEMS, 3)).toBe(4);
  });

  it("asks for the fork's name, then sends the request", () => {
    const { el, model } = opened();
    const fork = /** @type {HTMLButtonElement} */ (el.querySelectorAll(".mentra-fork")[1]);
    fork.click();
    const name = /** @type {HTMLInputElement} */ (el.querySelector(".mentra-fork-name"));
    expect(name.value).toBe("writer-fork-3");
    name.value = "what-if";
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-fork-confirm")).click();
    expect(model.sent).toEqual([{ kind: "fork", at: 3, name: "what-if" }]);
    expect(el.querySelector(".mentra-inline-form")).toBeNull();
  });

  it("edits from the words as written, fetched when Edit opens, and sends them in place", async () => {
    const { el, model } = opened();
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-edit")).click();
    const text = /** @type {HTMLTextAreaElement} */ (el.querySelector(".mentra-edit-text"));
    expect(model.sent).toEqual([{ kind: "edit_source", index: 0 }]);
    expect(text.disabled).toBe(true);
    model.emit("msg:custom", { kind: "source", index: 0, text: "plot *it*" });
    await Promise.resolve();
    expect(text.disabled).toBe(false);
    expect(text.value).toBe("plot *it*");
    text.value = "plot it as bars";
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-edit-confirm")).click();
    expect(model.sent.at(-1)).toEqual({ kind: "edit", index: 0, text: "plot it as bars" });
  });

  it("cancel closes a form without sending anything", () => {
    const { el, model } = opened();
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-fork")).click();
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-cancel")).click();
    expect(el.querySelector(".mentra-inline-form")).toBeNull();
    expect(model.sent).toEqual([]);
  });

  it("turns Edit off while the agent runs", () => {
    const { el, model } = opened();
    const edit = () => /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-edit"));
    model.set("status", { name: "streaming" });
    expect(edit().disabled).toBe(true);
    model.set("status", { name: "finished" });
    expect(edit().disabled).toBe(false);
  });

  it("keeps one row per message when the transcript grows or is replaced", () => {
    const { el, model } = opened();
    model.emit("msg:custom", { kind: "items", seq: 2, start: 4, items: [
      { index: 4, role: "user", kind: "text", html: "<p>more</p>" }] });
    expect(rows(el).map((r) => r.index)).toEqual([0, 1, 3, 4]);
    model.emit("msg:custom", { kind: "items", seq: 3, start: 0, items: ITEMS.slice(0, 1) });
    expect(rows(el).map((r) => r.index)).toEqual([0]);
  });

  it("names a fork's parent and fork point in the header, and shows what the last action did", () => {
    const { el, model } = opened({ ...STATE, fork_origin: { parent: "analyst", at: 4 } });
    expect(el.querySelector(".mentra-fork-origin")?.textContent).toBe("fork of analyst at message 4");
    model.set("notice", "forked as 'what-if' with the first 3 messages");
    expect(el.querySelector(".mentra-time-travel-notice")?.textContent)
      .toBe("forked as 'what-if' with the first 3 messages");
    expect(forkOriginLabel({})).toBe("");
  });
});
