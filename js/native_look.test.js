// The notebook-native behaviour of the views (issue 15): JupyterLab's buttons,
// Stop / Finish round with "stopping…", the cut-reply marker, the turn scope,
// long messages, code tools, one place for each approval, one disconnect notice.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { FakeModel } from "./fake_model.js";
import * as agentModule from "./agent_view.js";
import * as teamModule from "./team_view.js";
import * as pickerModule from "./subagent_picker.js";
import { appendTranscript, highlightCode, insertCell, measureClamped } from "./dom.js";

const render = agentModule.default.render;
const STATE = {
  agent_name: "writer", model_key: "test:default", status: { name: "streaming" }, run_generation: 1,
  usage: {}, cost: "", pending_tools: [], approvals: [], resumable: {}, scope: {},
};
const $ = (/** @type {ParentNode} */ node, /** @type {string} */ selector) =>
  /** @type {HTMLElement} */ (node.querySelector(selector));
const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));

/** @param {string} html */
function item(html, extra = {}) {
  return { index: 1, role: "assistant", kind: "text", html, ...extra };
}

beforeEach(() => document.body.replaceChildren());

describe("every widget module", () => {
  it("exports render only in its default export, so anywidget logs no deprecation warning", () => {
    for (const module of [agentModule, teamModule, pickerModule]) {
      expect("render" in module).toBe(false);
      expect(typeof module.default.render).toBe("function");
    }
  });
});

describe("buttons", () => {
  it("carry JupyterLab's button classes, with the tone of what they do", () => {
    const el = document.createElement("div");
    render({ model: new FakeModel(STATE), el });
    const classes = (/** @type {string} */ s) => [...$(el, s).classList];
    expect(classes(".mentra-send")).toEqual(expect.arrayContaining(["jp-Button", "jp-mod-styled", "jp-mod-accept"]));
    expect(classes(".mentra-stop")).toEqual(expect.arrayContaining(["jp-mod-styled", "jp-mod-warn"]));
    expect(classes(".mentra-finish")).toEqual(expect.arrayContaining(["jp-mod-styled", "jp-mod-reject"]));
    expect(classes(".mentra-interrupt")).toEqual(expect.arrayContaining(["jp-mod-styled", "jp-mod-warn"]));
    expect(classes("textarea")).toContain("jp-mod-styled");
    for (const node of el.querySelectorAll("button")) expect(node.classList.contains("jp-Button")).toBe(true);
  });
});

describe("Stop and Finish round", () => {
  it("show stopping… at once on a click, before the kernel answers", () => {
    const el = document.createElement("div");
    const model = new FakeModel(STATE);
    render({ model, el });
    expect($(el, ".mentra-badge").textContent).toBe("streaming");
    $(el, ".mentra-stop").click();
    expect($(el, ".mentra-badge").textContent).toBe("stopping…");
    expect($(el, ".mentra-badge").dataset.status).toBe("stopping");
    expect(/** @type {HTMLButtonElement} */ ($(el, ".mentra-stop")).disabled).toBe(true);
    expect(/** @type {HTMLButtonElement} */ ($(el, ".mentra-finish")).disabled).toBe(true);
    expect(/** @type {HTMLButtonElement} */ ($(el, ".mentra-interrupt")).disabled).toBe(false);
    expect(model.sent.at(-1)).toEqual({ kind: "stop", now: true });
    model.set("status", { name: "finished" }); // the run ended
    expect($(el, ".mentra-badge").textContent).toBe("finished");
    model.set("status", { name: "streaming" }); // the next run is not stopping
    expect($(el, ".mentra-badge").textContent).toBe("streaming");
  });

  it("Finish round still lets Stop cut the round short", () => {
    const el = document.createElement("div");
    const model = new FakeModel(STATE);
    render({ model, el });
    $(el, ".mentra-finish").click();
    expect(model.sent.at(-1)).toEqual({ kind: "stop", now: false });
    expect($(el, ".mentra-badge").textContent).toBe("stopping…");
    expect(/** @type {HTMLButtonElement} */ ($(el, ".mentra-stop")).disabled).toBe(false);
    expect(/** @type {HTMLButtonElement} */ ($(el, ".mentra-finish")).disabled).toBe(true);
  });

  it("show the kernel's stopping state (a stop from a magic or another view)", () => {
    const el = document.createElement("div");
    const model = new FakeModel(STATE);
    render({ model, el });
    model.set("status", { name: "executing_tool", tool_name: "grep", stopping: "round" });
    expect($(el, ".mentra-badge").textContent).toBe("stopping…");
    model.set("status", { name: "finished", stopping: null });
    expect($(el, ".mentra-badge").textContent).toBe("finished");
  });
});

describe("a reply cut by Stop", () => {
  it("is marked where it stops", () => {
    const container = document.createElement("div");
    appendTranscript(container, [item("<p>half an answ</p>", { truncated: true }), item("<p>whole</p>", { index: 2 })], new Map());
    const [cut, whole] = container.querySelectorAll(".mentra-item");
    expect(/** @type {HTMLElement} */ (cut).dataset.truncated).toBe("true");
    expect(cut.querySelector(".mentra-truncated")?.textContent).toMatch(/^stopped here/);
    expect(whole.querySelector(".mentra-truncated")).toBeNull();
  });

  it("is told apart from a tool result shown in part", () => {
    const container = document.createElement("div");
    appendTranscript(container, [
      { index: 0, role: "assistant", kind: "tool_use", id: "t1", name: "read", input: "{}" },
      { index: 1, role: "user", kind: "tool_result", id: "t1", content: "x".repeat(10), truncated: true }], new Map());
    expect(container.querySelector(".mentra-truncated")).toBeNull();
    expect(container.querySelector("details.mentra-tool")?.textContent).toContain("the first 4,000 characters");
  });
});

describe("the turn scope", () => {
  it("marks every view with its agent and scope, and links a turn view to the full one", () => {
    const full = document.createElement("div");
    const turn = document.createElement("div");
    document.body.append(full, turn);
    render({ model: new FakeModel(STATE), el: full });
    render({ model: new FakeModel({ ...STATE, scope: { kind: "turn", first: 4 } }), el: turn });
    const [fullRoot, turnRoot] = [$(full, ".mentra-agent"), $(turn, ".mentra-agent")];
    expect(fullRoot.dataset.mentraAgent).toBe("writer");
    expect(fullRoot.dataset.mentraScope).toBe("full");
    expect(turnRoot.dataset.mentraScope).toBe("turn");
    expect($(full, ".mentra-full-link").hidden).toBe(true);
    const link = $(turn, ".mentra-full-link");
    expect(link.hidden).toBe(false);
    const scrolled = vi.fn();
    fullRoot.scrollIntoView = scrolled;
    link.click();
    expect(scrolled).toHaveBeenCalledOnce();
  });

  it("says how to show the whole conversation when no full view is in the page", () => {
    const turn = document.createElement("div");
    document.body.append(turn);
    render({ model: new FakeModel({ ...STATE, scope: { kind: "turn", first: 0 } }), el: turn });
    $(turn, ".mentra-full-link").click();
    expect($(turn, ".mentra-header-notice").textContent).toContain("%mentra show writer");
  });
});

describe("long messages", () => {
  it("are clamped with Show more when they overflow, and open in place", () => {
    const container = document.createElement("div");
    appendTranscript(container, [item("<p>long</p>"), item("<p>short</p>", { index: 2 }),
      { index: 0, role: "user", kind: "text", html: "<p>prompt</p>" }], new Map());
    const [long, short, prompt] = container.querySelectorAll(".mentra-item");
    expect($(long, ".mentra-clamp").dataset.clamp).toBe("message");
    expect($(prompt, ".mentra-clamp").dataset.clamp).toBe("prompt");
    // jsdom lays nothing out: give the bodies the sizes a browser would.
    Object.defineProperty($(long, ".mentra-clamp"), "scrollHeight", { value: 2000 });
    Object.defineProperty($(long, ".mentra-clamp"), "clientHeight", { value: 400 });
    Object.defineProperty($(short, ".mentra-clamp"), "scrollHeight", { value: 40 });
    Object.defineProperty($(short, ".mentra-clamp"), "clientHeight", { value: 40 });
    measureClamped($(long, ".mentra-clamp"));
    measureClamped($(short, ".mentra-clamp"));
    measureClamped($(long, ".mentra-clamp")); // measured again (a resize): still one toggle
    expect(long.querySelectorAll(".mentra-more").length).toBe(1);
    const more = $(long, ".mentra-more");
    expect(short.querySelector(".mentra-more")).toBeNull();
    more.click();
    expect(long.classList.contains("mentra-expanded")).toBe(true);
    expect(more.textContent).toBe("Show less");
    more.click();
    expect(long.classList.contains("mentra-expanded")).toBe(false);
  });
});

describe("code blocks", () => {
  const code = '<pre><code class="language-python"><span class="k">def</span> f():\n    pass\n</code></pre>';

  it("are coloured from the kernel's token map, their text unchanged", () => {
    const container = document.createElement("div");
    appendTranscript(container, [item(
      '<pre><code class="language-python" data-hl="k:3 1 nf:1 p:1 1 p:2 s2:5">def f(x):"é😀"</code></pre>')], new Map());
    const code = $(container, ".mentra-code code");
    expect(code.textContent).toBe('def f(x):"é😀"');
    expect([...code.querySelectorAll("span")].map((s) => [s.className, s.textContent]))
      .toEqual([["k", "def"], ["nf", "f"], ["p", "("], ["p", "):"], ["s2", '"é😀"']]);
    expect(code.hasAttribute("data-hl")).toBe(false);
  });

  it("stay plain when a token map does not fit or names something that is not a class", () => {
    for (const map of ["k:3 9", 'k:3 x"onclick:1', "k:3 <b>:1", "k:99"]) {
      const code = document.createElement("code");
      code.textContent = "def f";
      code.dataset.hl = map;
      highlightCode(code);
      expect(code.children.length).toBe(0);
      expect(code.textContent).toBe("def f");
    }
  });

  it("copy their text (not their markup)", async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    const container = document.createElement("div");
    appendTranscript(container, [item(code)], new Map());
    const copy = $(container, ".mentra-code .mentra-copy");
    copy.click();
    await Promise.resolve();
    expect(writeText).toHaveBeenCalledWith("def f():\n    pass");
  });

  it("insert themselves as a new code cell below the output's cell", () => {
    document.body.innerHTML = '<div class="jp-Notebook"><div class="jp-Cell" id="a"><div class="out"></div></div>' +
      '<div class="jp-Cell" id="b"></div></div>';
    const container = /** @type {HTMLElement} */ (document.querySelector(".out"));
    appendTranscript(container, [item(code)], new Map());
    /** @type {any[]} */
    const drops = [];
    /** @type {boolean[]} */
    const marked = [];
    document.querySelector(".jp-Notebook")?.addEventListener("lm-drop", (event) => {
      drops.push(event);
      marked.push(/** @type {HTMLElement} */ (event.target).classList.contains("jp-mod-dropTarget"));
    });
    $(container, ".mentra-insert").click();
    expect(drops.length).toBe(1);
    const drop = drops[0];
    expect(drop.target.id).toBe("b"); // dropped on the next cell: inserted before it
    expect(marked).toEqual([true]); // ... which the notebook finds by its drop-target class
    expect(document.querySelector(".jp-mod-dropTarget")).toBeNull();
    expect(drop.proposedAction).toBe("copy");
    expect(drop.source).toBeNull(); // not this notebook: a copy, not a move
    expect(drop.mimeData.hasData("application/vnd.jupyter.cells")).toBe(true);
    expect(drop.mimeData.getData("application/vnd.jupyter.cells")).toEqual([
      { cell_type: "code", source: "def f():\n    pass", metadata: {}, outputs: [], execution_count: null }]);
  });

  it("are dropped on the notebook itself when their cell is the last, and not at all outside one", () => {
    document.body.innerHTML = '<div class="jp-Notebook"><div class="jp-Cell"><div class="out"></div></div></div>';
    const drops = /** @type {EventTarget[]} */ ([]);
    const notebook = /** @type {HTMLElement} */ (document.querySelector(".jp-Notebook"));
    notebook.addEventListener("lm-drop", (event) => drops.push(/** @type {EventTarget} */ (event.target)));
    expect(insertCell(/** @type {Element} */ (document.querySelector(".out")), "x = 1")).toBe(true);
    expect(drops).toEqual([notebook]);
    expect(insertCell(document.createElement("div"), "x = 1")).toBe(false);
  });
});

describe("a paused tool call", () => {
  const approval = { id: "c1", ref: "a1", name: "drop_rows", input: "{}" };

  it("has its buttons in one view of the agent: the newest", async () => {
    const [first, second] = [document.createElement("div"), document.createElement("div")];
    document.body.append(first, second);
    const model = new FakeModel({ ...STATE, approvals: [approval] });
    render({ model, el: first });
    render({ model, el: second });
    await nextFrame();
    expect(first.querySelectorAll(".mentra-approval").length).toBe(0);
    expect($(first, ".mentra-approvals").textContent).toContain("drop_rows waits for your approval");
    expect(second.querySelectorAll(".mentra-approval").length).toBe(1);
    expect(document.querySelectorAll(".mentra-approve").length).toBe(1);
  });

  it("shows once in a view: in the transcript and its approval box, not again as a live call", () => {
    const el = document.createElement("div");
    document.body.append(el);
    const model = new FakeModel({ ...STATE, approvals: [approval],
      pending_tools: [{ id: "c1", name: "drop_rows", input_json: "{}" }, { id: "c2", name: "grep", input_json: "" }] });
    render({ model, el });
    model.emit("msg:custom", { kind: "items", seq: 1, start: 0, items: [
      { index: 0, role: "assistant", kind: "tool_use", id: "c1", name: "drop_rows", input: "{}" }] });
    expect([...el.querySelectorAll(".mentra-live-tool span")].map((n) => n.textContent)).toEqual(["tool call: grep"]);
    expect(el.querySelectorAll("details.mentra-tool").length).toBe(1);
    expect(el.querySelectorAll(".mentra-approval").length).toBe(1);
  });

  it("keeps a reason being typed when another view of the agent comes", async () => {
    const first = document.createElement("div");
    document.body.append(first);
    const model = new FakeModel({ ...STATE, approvals: [approval] });
    render({ model, el: first });
    const reason = /** @type {HTMLInputElement} */ ($(first, ".mentra-reason"));
    reason.value = "not on a Friday";
    model.set("approvals", [{ ...approval }]); // the same call, sent again
    const second = document.createElement("div");
    document.body.prepend(second); // an older cell shows the agent too: the first stays newest
    render({ model, el: second });
    await nextFrame();
    expect($(first, ".mentra-reason")).toBe(reason);
    expect(reason.value).toBe("not on a Friday");
    expect(second.querySelector(".mentra-approval")).toBeNull();
  });

  it("moves its buttons to the remaining view when the newest is closed", async () => {
    const [first, second] = [document.createElement("div"), document.createElement("div")];
    document.body.append(first, second);
    const model = new FakeModel({ ...STATE, approvals: [approval] });
    render({ model, el: first });
    const cleanup = render({ model, el: second });
    await nextFrame();
    cleanup();
    expect(first.querySelectorAll(".mentra-approval").length).toBe(1);
  });
});

describe("a disconnected view", () => {
  it("says so once, however often Jupyter reports it", () => {
    const el = document.createElement("div");
    const model = new FakeModel(STATE);
    render({ model, el });
    model.emit("comm_live_update");
    model.emit("comm_live_update");
    model.set("status", { name: "finished" });
    expect($(el, ".mentra-badge").textContent).toBe("disconnected");
    expect(el.textContent?.match(/its kernel stopped/g)?.length).toBe(1);
    for (const node of el.querySelectorAll("button")) expect(/** @type {HTMLButtonElement} */ (node).disabled).toBe(true);
  });
});

describe("the stylesheet", () => {
  const css = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "mentra.css"), "utf8").replace(/\/\*[\s\S]*?\*\//g, "");

  // The four state colours' fallbacks (issue 36.5: marimo has no --jp-* variables) are
  // the one exception: a hue mixed with the text colour, so they follow the page's theme.
  const stateColour = /^ {2}--mentra-(accent|ok|warn|error): var\(--jp-[a-z]+-color1, color-mix\(in srgb, rgb\(\d+ \d+ \d+\) 70%, currentColor\)\);$/gm;

  it("writes no colour as a literal: every one is a JupyterLab theme variable or derived from the text colour", () => {
    expect(css.match(stateColour)?.length).toBe(4);
    const rest = css.replace(stateColour, "");
    expect(rest.match(/#[0-9a-f]{3,8}\b/gi)).toBeNull();
    expect(rest.match(/\b(rgba?|hsla?|hwb|lab|lch|oklab|oklch)\(/gi)).toBeNull();
    const named = /(?<![-\w])(white|black|red|green|blue|yellow|orange|gray|grey|silver|navy)(?![-\w])/gi;
    expect(rest.match(named)).toBeNull();
  });

  it("uses JupyterLab's variables for what the theme decides", () => {
    for (const variable of ["--jp-ui-font-color1", "--jp-layout-color1", "--jp-border-color2", "--jp-warn-color1",
      "--jp-content-link-color", "--jp-mirror-editor-keyword-color", "--jp-cell-editor-background"]) {
      expect(css).toContain(`var(${variable}`);
    }
  });
});
