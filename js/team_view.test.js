import { beforeEach, describe, expect, it } from "vitest";
import { FakeModel } from "./fake_model.js";
import teamView, { ago } from "./team_view.js";

const { render } = teamView;

const STATE = {
  lead: { name: "lead", status: "idle", unread: 1 },
  members: [
    { name: "alice", role: "researcher", model: "test:default", status: "working", alive: true, unread: 2, last_active: null },
    { name: "bob", role: "writer", model: "test:default", status: "failed", error: "boom", alive: false, unread: 0, last_active: null },
  ],
  requests: [{ id: "r1", protocol: "plan_approval", sender: "alice", content: "Plan: read, then write", created_at: 0 }],
  notice: "",
};

describe("TeamView: teammates' tool calls waiting for approval", () => {
  it("marks the teammate and sends each answer once", () => {
    const el = document.createElement("div");
    document.body.replaceChildren(el);
    const model = new FakeModel({ ...STATE, requests: [] });
    render({ model, el });
    expect(el.querySelector(".mentra-approval")).toBeNull();
    model.set("approvals", [{ agent: "alice", id: "c1", name: "drop_rows", input: '{"table": "events"}' }]);
    const badge = el.querySelector('[data-name="alice"] .mentra-badge');
    expect(badge?.textContent).toBe("waiting for approval: drop_rows");
    expect(badge?.getAttribute("data-status")).toBe("waiting");
    const box = el.querySelector(".mentra-approval");
    expect(box?.querySelector(".mentra-name")?.textContent).toBe("alice wants to run drop_rows");
    /** @type {HTMLInputElement} */ (box?.querySelector(".mentra-reason")).value = " keep them ";
    /** @type {HTMLButtonElement} */ (box?.querySelector(".mentra-deny")).click();
    /** @type {HTMLButtonElement} */ (box?.querySelector(".mentra-approve")).click(); // disabled now
    expect(model.sent).toEqual([{ kind: "deny_call", agent: "alice", call_id: "c1", reason: "keep them" }]);
    model.set("approvals", []);
    expect(el.querySelector(".mentra-approval")).toBeNull();
    expect(el.querySelector('[data-name="alice"] .mentra-badge')?.textContent).toBe("working");
  });
});

describe("TeamView", () => {
  /** @type {HTMLElement} */
  let el;
  beforeEach(() => {
    el = document.createElement("div");
    document.body.replaceChildren(el);
  });

  it("renders members with role, status, liveness and unread mail", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    const rows = [...el.querySelectorAll(".mentra-members li")];
    expect(rows.map((r) => r.getAttribute("data-name"))).toEqual(["alice", "bob"]);
    expect(rows[0].querySelector(".mentra-alive")?.textContent).toBe("alive");
    expect(rows[0].querySelector(".mentra-usage")?.textContent).toBe("2 unread");
    expect(rows[1].querySelector(".mentra-badge")?.textContent).toBe("failed: boom");
    expect(rows[1].querySelector(".mentra-badge")?.getAttribute("data-status")).toBe("failed");
    expect(el.querySelector(".mentra-header")?.textContent).toContain("1 unread");
  });

  it("approves, and rejects only with a reason", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-approve")).click();
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-reject")).click(); // no reason: nothing sent
    /** @type {HTMLInputElement} */ (el.querySelector(".mentra-reason")).value = "too risky";
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-reject")).click();
    expect(model.sent).toEqual([
      { kind: "approve", request_id: "r1" },
      { kind: "reject", request_id: "r1", reason: "too risky" },
    ]);
  });

  it("updates in place and cleans up", () => {
    const model = new FakeModel(STATE);
    const cleanup = render({ model, el });
    model.set("requests", []);
    expect(el.querySelector(".mentra-request")).toBeNull();
    model.set("notice", "only pending requests can be answered");
    expect(el.querySelector(".mentra-notice")?.textContent).toBe("only pending requests can be answered");
    cleanup();
    expect(model.listenerCount()).toBe(0);
    expect(el.children.length).toBe(0);
  });

  it("says how long ago a member was active", () => {
    expect(ago(100, 130)).toBe("30 s ago");
    expect(ago(100, 100 + 180)).toBe("3 min ago");
    expect(ago(null, 100)).toBe("");
  });
});

describe("TeamView: a teammate's transcript", () => {
  const preview = (name, pages, text) => ({ kind: "preview", name, pages, has_older: true, items: [
    { index: 7, role: "assistant", kind: "text", html: `<p>${text}</p>` }] });

  it("opens under the teammate's row on a click, and closes on the next", () => {
    const el = document.createElement("div");
    document.body.replaceChildren(el);
    const model = new FakeModel(STATE);
    render({ model, el });
    const row = /** @type {HTMLElement} */ (el.querySelector('[data-name="alice"]'));
    row.click();
    const [opened] = /** @type {{kind: string, name: string, view: string}[]} */ (model.sent);
    expect(opened).toMatchObject({ kind: "open", name: "alice" });
    expect(el.querySelector('[data-name="alice"] .mentra-preview')?.textContent).toContain("loading…");
    model.emit("msg:custom", preview("alice", 1, "three facts"));
    const open = /** @type {HTMLElement} */ (el.querySelector('[data-name="alice"]'));
    expect(open.getAttribute("aria-expanded")).toBe("true");
    expect(open.querySelector(".mentra-preview .mentra-body")?.textContent).toBe("three facts");
    expect(el.querySelector('[data-name="bob"] .mentra-preview')).toBeNull();
    /** @type {HTMLElement} */ (open.querySelector(".mentra-older")).click();
    // Until the second page arrives, the first stays in view.
    expect(el.querySelector('[data-name="alice"] .mentra-body')?.textContent).toBe("three facts");
    /** @type {HTMLElement} */ (el.querySelector('[data-name="alice"] .mentra-preview')).click(); // reading is not closing
    /** @type {HTMLElement} */ (el.querySelector('[data-name="alice"]')).click();
    /** @type {HTMLElement} */ (el.querySelector('[data-name="bob"]')).dispatchEvent(
      new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    const view = opened.view;
    expect(model.sent.slice(1)).toEqual([{ kind: "older", view }, { kind: "close", view },
      { kind: "open", name: "bob", view }]);
  });

  it("is each view's own: two cells of one team read two teammates", () => {
    const views = [0, 1].map(() => document.createElement("div"));
    document.body.replaceChildren(...views);
    const model = new FakeModel(STATE);
    for (const el of views) render({ model, el });
    /** @type {HTMLElement} */ (views[0].querySelector('[data-name="alice"]')).click();
    /** @type {HTMLElement} */ (views[1].querySelector('[data-name="bob"]')).click();
    const [first, second] = /** @type {{view: string}[]} */ (model.sent);
    expect(first.view).not.toBe(second.view);
    // The kernel's messages reach every view of the model; each shows its own.
    model.emit("msg:custom", preview("alice", 1, "alice's notes"));
    model.emit("msg:custom", preview("bob", 1, "bob's notes"));
    expect(views[0].querySelectorAll(".mentra-preview")).toHaveLength(1);
    expect(views[0].querySelector(".mentra-preview .mentra-body")?.textContent).toBe("alice's notes");
    expect(views[1].querySelectorAll(".mentra-preview")).toHaveLength(1);
    expect(views[1].querySelector(".mentra-preview .mentra-body")?.textContent).toBe("bob's notes");
  });
});

describe("TeamView: one team shown in several cells", () => {
  it("shows a pending request's buttons once, in the newest view", async () => {
    const views = [0, 1, 2].map(() => document.createElement("div"));
    document.body.replaceChildren(...views);
    const model = new FakeModel(STATE);
    for (const el of views) render({ model, el });
    await new Promise((resolve) => requestAnimationFrame(resolve));
    expect(document.querySelectorAll(".mentra-request").length).toBe(1);
    expect(views[2].querySelector(".mentra-request")).not.toBeNull();
    expect(views[0].textContent).toContain("1 request waits for you in the newest view of this team");
  });
});

describe("TeamView in a saved notebook", () => {
  it("marks itself live, so the markdown copy above it is hidden (mentra.css)", () => {
    const el = document.createElement("div");
    document.body.replaceChildren(el);
    render({ model: new FakeModel(STATE), el });
    expect(/** @type {HTMLElement} */ (el.querySelector(".mentra-team")).dataset.mentraLive).toBe("true");
  });
});
