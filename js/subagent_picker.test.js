import { beforeEach, describe, expect, it } from "vitest";
import { FakeModel } from "./fake_model.js";
import picker from "./subagent_picker.js";

const { render } = picker;

const STATE = {
  root_name: "lead",
  badge: { count: 2, text: "2", tone: "success" },
  options: [
    { label: "alpha", status: "running", model: "anthropic:x", path: "/root/alpha", agent_id: "a1" },
    { label: "beta", status: "completed", model: "test:default", path: "/root/beta", agent_id: "b1" },
  ],
  preview: {},
  notice: "",
};

describe("SubagentPickerView", () => {
  /** @type {HTMLElement} */
  let el;
  beforeEach(() => {
    el = document.createElement("div");
    document.body.replaceChildren(el);
  });

  it("renders the badge with its tone and one row per child", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    const badge = el.querySelector(".mentra-count");
    expect(badge?.textContent).toBe("2");
    expect(badge?.getAttribute("data-tone")).toBe("active");
    const rows = [...el.querySelectorAll("li")];
    expect(rows.map((r) => r.querySelector(".mentra-name")?.textContent)).toEqual(["alpha", "beta"]);
    expect(rows[0].querySelector(".mentra-interrupt")).not.toBeNull(); // running: can be interrupted
    expect(rows[1].querySelector(".mentra-interrupt")).toBeNull();
  });

  it("opens a preview on click, interrupts without opening, loads older and closes", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    /** @type {HTMLElement} */ (el.querySelectorAll("li")[1]).click();
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-interrupt")).click();
    model.set("preview", {
      path: "/root/beta", status: "completed", model: "test:default", has_older: true,
      items: [{ index: 0, role: "assistant", kind: "text", html: "<p>B is fine</p>" }],
    });
    expect(el.querySelector(".mentra-preview .mentra-name")?.textContent).toBe("/root/beta");
    expect(el.querySelector(".mentra-preview p")?.textContent).toBe("B is fine");
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-older")).click();
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-close")).click();
    expect(model.sent).toEqual([
      { kind: "open", path: "/root/beta" },
      { kind: "interrupt", path: "/root/alpha" },
      { kind: "older" },
      { kind: "close" },
    ]);
  });

  it("updates in place as the tree changes", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    model.set("options", [...STATE.options, { label: "gamma", status: "errored", model: "m", path: "/root/gamma", agent_id: null }]);
    model.set("badge", { count: 3, text: "3", tone: "error" });
    expect(el.querySelectorAll("li").length).toBe(3);
    expect(el.querySelector(".mentra-count")?.getAttribute("data-tone")).toBe("error");
    model.set("options", []);
    expect(el.querySelector("li")?.textContent).toBe("no subagents yet");
  });

  it("shows a running child's reply as it streams under its preview", () => {
    const model = new FakeModel({ ...STATE, preview: { path: "/root/alpha", model: "m", items: [] } });
    render({ model, el });
    expect(el.querySelector(".mentra-preview .mentra-live")?.textContent).toBe("");
    model.set("preview_live", "half a sentence");
    expect(el.querySelector(".mentra-preview .mentra-live")?.textContent).toBe("half a sentence");
    model.set("preview", { path: "/root/alpha", model: "m", items: [], has_older: true });
    expect(el.querySelector(".mentra-preview .mentra-live")?.textContent).toBe("half a sentence");
    model.set("preview_live", "");
    expect(el.querySelector(".mentra-preview .mentra-live")?.textContent).toBe("");
  });

  it("shows a child waiting for approval and answers its call from the picker", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    expect(el.querySelector(".mentra-approval")).toBeNull();
    model.set("options", [{ ...STATE.options[0], waiting_for_approval: ["write_file"] }, STATE.options[1]]);
    model.set("approvals", [
      { path: "/root/alpha", id: "c1", ref: "c1@1", name: "write_file", input: '{"path": "out.txt"}' },
    ]);
    const badge = el.querySelectorAll("li")[0].querySelector(".mentra-badge");
    expect(badge?.textContent).toBe("waiting for approval: write_file");
    expect(badge?.getAttribute("data-status")).toBe("waiting");
    const box = /** @type {HTMLElement} */ (el.querySelector(".mentra-approval"));
    expect(box.querySelector(".mentra-name")?.textContent).toBe("alpha wants to run write_file");
    expect(box.querySelector("pre")?.textContent).toBe('{"path": "out.txt"}');
    /** @type {HTMLButtonElement} */ (box.querySelector(".mentra-approve")).click();
    /** @type {HTMLButtonElement} */ (box.querySelector(".mentra-deny")).click(); // disabled once answered
    expect(model.sent).toEqual([{ kind: "approve_call", path: "/root/alpha", call_id: "c1@1", always: false }]);

    model.set("approvals", [{ path: "/root/beta", id: "c2", ref: "c2@3", name: "shell", input: "{}" }]);
    const second = /** @type {HTMLElement} */ (el.querySelector(".mentra-approval"));
    /** @type {HTMLInputElement} */ (second.querySelector(".mentra-reason")).value = "not now";
    /** @type {HTMLButtonElement} */ (second.querySelector(".mentra-deny")).click();
    expect(model.sent[1]).toEqual({ kind: "deny_call", path: "/root/beta", call_id: "c2@3", reason: "not now" });
    model.set("approvals", []);
    expect(el.querySelector(".mentra-approval")).toBeNull();
  });

  it("cleanup removes every listener and the DOM", () => {
    const model = new FakeModel(STATE);
    const cleanup = render({ model, el });
    const row = /** @type {HTMLElement} */ (el.querySelector("li"));
    cleanup();
    expect(model.listenerCount()).toBe(0);
    expect(el.children.length).toBe(0);
    row.click();
    expect(model.sent).toEqual([]);
  });
});

describe("SubagentPickerView in a saved notebook", () => {
  it("marks itself live, so the markdown copy above it is hidden (mentra.css)", () => {
    const el = document.createElement("div");
    document.body.replaceChildren(el);
    render({ model: new FakeModel(STATE), el });
    expect(/** @type {HTMLElement} */ (el.querySelector(".mentra-picker")).dataset.mentraLive).toBe("true");
  });
});
