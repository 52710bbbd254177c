import { beforeEach, describe, expect, it } from "vitest";
import { FakeModel } from "./fake_model.js";
import agentView, { LIVE_WINDOW_MS, LiveStream, Reveal, initialize, resolveHtml } from "./agent_view.js";

const { render } = agentView;

const STATE = {
  agent_name: "writer",
  model_key: "test:default",
  status: { name: "finished" },
  run_generation: 2,
  usage: { input_tokens: 120, output_tokens: 30 },
  cost: "$0.0123 · $0.0456 with team",
  pending_tools: [],
};
const ITEMS = [
  { index: 0, role: "user", kind: "text", html: "<p>hello</p>" },
  { index: 1, role: "assistant", kind: "tool_use", id: "t1", name: "grep", input: '{"pattern": "x"}' },
  { index: 2, role: "user", kind: "tool_result", id: "t1", content: "no match", is_error: true },
  { index: 3, role: "assistant", kind: "text", html: "<p><strong>done</strong></p>" },
];

/** The kernel's answer to a view's hello: the whole transcript. */
function transcript(model, seq = 1, items = ITEMS) {
  model.emit("msg:custom", { kind: "items", seq, start: 0, items });
}

/** Frames until `read()` returns `text` (a piece is revealed over at most LIVE_WINDOW_MS;
 * a busy machine gets 30 s). */
async function revealed(/** @type {() => string|null} */ read, /** @type {string} */ text) {
  const deadline = performance.now() + 30_000;
  while (read() !== text && performance.now() < deadline) {
    await new Promise((resolve) => requestAnimationFrame(resolve));
  }
  expect(read()).toBe(text);
}

describe("Reveal", () => {
  it("reveals by performance.now(), whatever clock the frames' timestamps come from", async () => {
    // jsdom's frame timestamps run seconds behind performance.now(): a reveal timed by
    // them stood still that long (and a busy machine's tests gave up waiting).
    const frame = globalThis.requestAnimationFrame;
    globalThis.requestAnimationFrame = (callback) => frame(() => callback(0));
    try {
      const reveal = new Reveal(document.createElement("div"));
      reveal.set("First");
      reveal.set("First words");
      expect(reveal.shown).toBe("First");
      await revealed(() => reveal.shown, "First words");
    } finally {
      globalThis.requestAnimationFrame = frame;
    }
  });
});

describe("AgentView", () => {
  /** @type {HTMLElement} */
  let el;
  beforeEach(() => {
    el = document.createElement("div");
    document.body.replaceChildren(el);
  });

  it("is marked live once the kernel has spoken to its model, not before (a model from saved state)", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    const root = /** @type {HTMLElement} */ (el.querySelector(".mentra-agent"));
    expect(root.dataset.mentraLive).toBe("false"); // hidden by mentra.css; the saved markdown shows
    transcript(model);
    expect(root.dataset.mentraLive).toBe("true");
  });

  it("shows 'Show N earlier messages' for a paged transcript and prepends the page it asks for", () => {
    const model = new FakeModel({ ...STATE, scope: {} });
    render({ model, el });
    const more = /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-older"));
    // The kernel's greeting: the last page (messages 100 and 101) and the count before it.
    model.emit("msg:custom", { kind: "items", seq: 1, start: 0, earlier: 100, items: [
      { index: 100, role: "user", kind: "text", html: "<p>latest question</p>" },
      { index: 101, role: "assistant", kind: "text", html: "<p>latest answer</p>" }] });
    expect(more.hidden).toBe(false);
    expect(more.textContent).toBe("Show 100 earlier messages");
    more.click();
    expect(model.sent.at(-1)).toEqual({ kind: "earlier", before: 100 });
    expect(more.disabled).toBe(true); // one request at a time
    model.emit("msg:custom", { kind: "earlier", seq: 2, earlier: 0, items: [
      { index: 98, role: "user", kind: "text", html: "<p>older question</p>" },
      { index: 99, role: "assistant", kind: "text", html: "<p>older answer</p>" }] });
    const texts = [...el.querySelectorAll(".mentra-transcript p")].map((p) => p.textContent);
    expect(texts).toEqual(["older question", "older answer", "latest question", "latest answer"]);
    expect(more.hidden).toBe(true); // nothing earlier is left
    // A new message is appended after what was loaded, at the index the kernel counts.
    model.emit("msg:custom", { kind: "items", seq: 3, start: 4, items: [
      { index: 102, role: "user", kind: "text", html: "<p>next</p>" }] });
    expect([...el.querySelectorAll(".mentra-transcript p")].map((p) => p.textContent).at(-1)).toBe("next");
  });

  it("asks a turn view's earlier page from the turn's first message on", () => {
    const model = new FakeModel({ ...STATE, scope: { kind: "turn", first: 10 } });
    render({ model, el });
    model.emit("msg:custom", { kind: "items", seq: 1, start: 0, earlier: 60, items: [
      { index: 70, role: "user", kind: "text", html: "<p>q</p>" }] });
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-older")).click();
    expect(model.sent.at(-1)).toEqual({ kind: "earlier", before: 70 });
  });

  it("offers Undo on each turn of the conversation that changed cells, which asks the kernel to undo that turn", () => {
    const turns = [
      { index: 0, role: "user", kind: "text", html: "<p>add a cell</p>" },
      { index: 1, role: "assistant", kind: "tool_use", id: "t1", name: "insert_cell", input: '{"source": "y = 2"}' },
      { index: 2, role: "user", kind: "tool_result", id: "t1", content: "inserted code cell a1 at position 2" },
      { index: 3, role: "assistant", kind: "text", html: "<p>done</p>" },
      { index: 4, role: "user", kind: "text", html: "<p>just talk</p>" },
      { index: 5, role: "assistant", kind: "text", html: "<p>ok</p>" },
      { index: 6, role: "user", kind: "text", html: "<p>edit it</p>" },
      { index: 7, role: "assistant", kind: "tool_use", id: "t2", name: "edit_cell", input: "{}" },
      { index: 8, role: "user", kind: "tool_result", id: "t2", content: "edited a1" },
    ];
    // The changes were made while the history had 2 and 8 messages: in the turns from 0 and from 6.
    const model = new FakeModel({ ...STATE, scope: {}, changed_cells_at: [2, 8] });
    render({ model, el });
    transcript(model, 1, turns);
    const undoOn = () => [...el.querySelectorAll(".mentra-message-actions")]
      .filter((row) => row.querySelector(".mentra-undo-cells")).map((row) => Number(/** @type {HTMLElement} */ (row).dataset.index));
    expect(undoOn()).toEqual([0, 6]);
    const undo = /** @type {HTMLButtonElement} */ (el.querySelector('.mentra-message-actions[data-index="6"] .mentra-undo-cells'));
    expect(undo.textContent).toBe("Undo");
    undo.click();
    expect(model.sent.at(-1)).toEqual({ kind: "undo", first: 6 });

    model.set("changed_cells_at", [2]);  // the kernel after that undo
    expect(undoOn()).toEqual([0]);
    model.set("status", { name: "streaming" });  // an undo rewinds: not while the agent runs
    expect(/** @type {HTMLButtonElement} */ (el.querySelector(".mentra-undo-cells")).disabled).toBe(true);
    model.set("changed_cells_at", []);
    expect(undoOn()).toEqual([]);
  });

  it("offers no Undo in a turn's view, which is replaced by its markdown when the turn ends", () => {
    const model = new FakeModel({ ...STATE, scope: { kind: "turn", first: 0 }, changed_cells_at: [] });
    render({ model, el });
    transcript(model, 1, [
      { index: 0, role: "user", kind: "text", html: "<p>add a cell</p>" },
      { index: 1, role: "assistant", kind: "tool_use", id: "t1", name: "insert_cell", input: "{}" },
      { index: 2, role: "user", kind: "tool_result", id: "t1", content: "inserted code cell a1 at position 2" },
    ]);
    expect(el.querySelector(".mentra-cells-changed")?.textContent).toContain("a1");
    expect(el.querySelector(".mentra-undo-cells")).toBeNull();
  });

  it("shows an unknown cost as such and no cost text when none is set", () => {
    const model = new FakeModel({ ...STATE, cost: "cost unknown" });
    render({ model, el });
    expect(el.querySelector(".mentra-usage")?.textContent).toBe("120 in / 30 out tokens · cost unknown");
    model.set("cost", "");
    model.emit("change:cost");
    expect(el.querySelector(".mentra-usage")?.textContent).toBe("120 in / 30 out tokens");
  });

  it("renders header, transcript and tool calls from state", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    transcript(model);
    expect(el.querySelector(".mentra-name")?.textContent).toBe("writer");
    expect(el.querySelector(".mentra-badge")?.textContent).toBe("finished");
    expect(el.querySelector(".mentra-badge")?.getAttribute("data-status")).toBe("finished");
    expect(el.querySelector(".mentra-usage")?.textContent)
      .toBe("120 in / 30 out tokens · $0.0123 · $0.0456 with team");
    expect(el.querySelector(".mentra-run")?.textContent).toBe("run 2");
    const tool = el.querySelector("details.mentra-tool");
    expect(tool?.querySelector("summary")?.textContent).toBe("tool call: grep");
    expect(tool?.classList.contains("mentra-error")).toBe(true); // its result was an error
    expect([...(tool?.querySelectorAll("pre") ?? [])].map((p) => p.textContent)).toEqual(['{"pattern": "x"}', "no match"]);
    expect(el.querySelector("strong")?.textContent).toBe("done");
    expect(model.sent).toEqual([{ kind: "hello" }]);
  });

  it("shows the images a tool result carries as thumbnails in its call, enlarged on click", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    transcript(model, 1, [
      { index: 0, role: "assistant", kind: "tool_use", id: "v1", name: "view_figure", input: "{}" },
      { index: 1, role: "user", kind: "tool_result", id: "v1", content: "matplotlib figure 1: 640x480 px",
        images: [{ media_type: "image/png", data: "iVBORw0KGgo=" }, { media_type: "text/html", data: "PGI+" }] },
    ]);
    const thumbs = [...el.querySelectorAll("details.mentra-tool img.mentra-thumb")];
    expect(thumbs.map((i) => i.getAttribute("src"))).toEqual(["data:image/png;base64,iVBORw0KGgo="]);
    /** @type {HTMLElement} */ (thumbs[0]).click();
    expect(thumbs[0].classList.contains("mentra-thumb-open")).toBe(true);
  });

  it("applies deltas in order, ignores duplicates and stale ones, and resets", async () => {
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    const live = () => el.querySelectorAll(".mentra-live")[1].textContent;
    model.emit("msg:custom", { s: 1, t: "Hel" });
    model.emit("msg:custom", { s: 2, t: "lo" });
    model.emit("msg:custom", { s: 2, t: "lo" });
    model.emit("msg:custom", { s: 1, t: "Hel" });
    await revealed(live, "Hello");
    model.emit("msg:custom", { kind: "reset", seq: 3, text: "", thinking: "", tools: {} });
    expect(live()).toBe("");
  });

  it("takes a hello's answer in one message: the transcript and the half-streamed text", () => {
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    const live = () => el.querySelectorAll(".mentra-live")[1].textContent;
    model.emit("msg:custom", { s: 1, t: "stale" });
    model.emit("msg:custom", { kind: "items", seq: 2, start: 0,
      items: [{ index: 0, role: "user", kind: "text", html: "<p>go on</p>" }], live: { text: "Half way" } });
    expect(live()).toBe("Half way");
    expect(el.querySelector('.mentra-item[data-role="user"]')?.textContent).toContain("go on");
  });

  it("reveals a piece over the time since the one before, never longer than the window", async () => {
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    const live = () => el.querySelectorAll(".mentra-live")[1].textContent;
    model.emit("msg:custom", { s: 1, t: "First words" });
    await new Promise((resolve) => setTimeout(resolve, 1.5 * LIVE_WINDOW_MS)); // a quiet spell
    model.emit("msg:custom", { s: 2, t: " and a piece" });
    await revealed(live, "First words and a piece");
    // A piece that comes while the one before is still being revealed shows that one in full first.
    model.emit("msg:custom", { s: 3, t: " — more" });
    model.emit("msg:custom", { s: 4, t: " and more" });
    expect(live().startsWith("First words and a piece — more")).toBe(true);
  });

  it("shows a stream's first words at once and reveals each later batch gradually", async () => {
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    const live = () => el.querySelectorAll(".mentra-live")[1].textContent;
    model.emit("msg:custom", { s: 1, t: "First words" });
    expect(live()).toBe("First words");
    const batch = " and a whole second of text that arrived in one message";
    model.emit("msg:custom", { s: 2, t: batch });
    expect(live()).toBe("First words"); // no frame has run yet
    await revealed(live, `First words${batch}`);
    // A commit shows the reply in the transcript at once and empties the live text.
    model.emit("msg:custom", { kind: "reset", seq: 3, text: "", thinking: "", tools: {} });
    expect(live()).toBe("");
  });

  it("shows partial tool input as it streams", () => {
    const model = new FakeModel({ ...STATE, pending_tools: [{ id: "t9", name: "search", input_json: "" }] });
    render({ model, el });
    model.emit("msg:custom", { s: 1, t: "", u: { t9: '{"q": "ca' } });
    model.emit("msg:custom", { s: 2, t: "", u: { t9: 'ts"}' } });
    const box = el.querySelector(".mentra-live-tool");
    expect(box?.querySelector("span")?.textContent).toBe("tool call: search");
    expect(box?.querySelector("pre")?.textContent).toBe('{"q": "cats"}');
  });

  it("re-renders on trait changes", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    model.set("status", { name: "executing_tool", tool_name: "grep" });
    expect(el.querySelector(".mentra-badge")?.textContent).toBe("running grep");
    expect(/** @type {HTMLButtonElement} */ (el.querySelector(".mentra-stop")).disabled).toBe(false);
  });

  it("appends new messages to the transcript and re-renders after a rollback", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    transcript(model, 1, ITEMS.slice(0, 2));
    const first = el.querySelector(".mentra-item");
    model.emit("msg:custom", { kind: "items", seq: 2, start: 2, items: ITEMS.slice(2) });
    const nodes = el.querySelectorAll(".mentra-item");
    expect(nodes.length).toBe(3); // the result sits inside its call's block
    expect(nodes[0]).toBe(first); // appended, not re-rendered
    expect(el.querySelector("details.mentra-tool")?.classList.contains("mentra-error")).toBe(true);
    model.emit("msg:custom", { kind: "items", seq: 3, start: 0, items: ITEMS.slice(0, 1) });
    expect(el.querySelectorAll(".mentra-item").length).toBe(1);
    expect(el.querySelector(".mentra-item")).not.toBe(first);
  });

  it("builds a streamed reply's HTML from the text it already holds", () => {
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    transcript(model, 1, ITEMS.slice(0, 1));
    const text = "A long streamed answer with < and & in it, and more.";
    model.emit("msg:custom", { s: 2, t: text.slice(0, 30) });
    expect(el.querySelectorAll(".mentra-live")[1].textContent).toBe(text.slice(0, 30));
    model.emit("msg:custom", {
      kind: "items", seq: 3, start: 1, basis: [text.length, 0], tail: [text.slice(30), ""],
      items: [{ index: 1, role: "assistant", kind: "text", html_parts: ["<p><em>", [0, 0, text.length], "</em></p>"] }],
    });
    const reply = /** @type {Element} */ (el.querySelectorAll(".mentra-item")[1].querySelector(".mentra-body"));
    expect(reply.innerHTML).toBe("<p><em>A long streamed answer with &lt; and &amp; in it, and more.</em></p>");
    expect(el.querySelectorAll(".mentra-live")[1].textContent).toBe("");
    expect(model.sent).toEqual([{ kind: "hello" }]);
  });

  it("asks for everything again, once, when it missed text a reply refers to", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    transcript(model, 1, []);
    const byReference = (seq) => ({
      kind: "items", seq, start: 0, basis: [40, 0], tail: ["", ""],
      items: [{ index: 0, role: "assistant", kind: "text", html_parts: [[0, 0, 40]] }],
    });
    model.emit("msg:custom", byReference(2));
    model.emit("msg:custom", byReference(3));
    expect(model.sent).toEqual([{ kind: "hello" }, { kind: "hello" }]);
    expect(el.querySelectorAll(".mentra-item").length).toBe(0);
    transcript(model, 4);
    expect(el.querySelectorAll(".mentra-item").length).toBe(3);
    model.emit("msg:custom", byReference(5));
    expect(model.sent.length).toBe(3); // a new mismatch after the answer asks again
  });

  it("sends the right message for each control", () => {
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-stop")).click();
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-interrupt")).click();
    model.set("status", { name: "finished" });
    model.set("status", { name: "streaming" });
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-finish")).click();
    model.set("status", { name: "finished" });
    const box = /** @type {HTMLTextAreaElement} */ (el.querySelector("textarea"));
    box.value = "  next question  ";
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-send")).click();
    box.value = "via keyboard";
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
    box.value = "   ";
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-send")).click();
    expect(model.sent).toEqual([
      { kind: "hello" },
      { kind: "stop", now: true },
      { kind: "interrupt" },
      { kind: "stop", now: false },
      { kind: "send", text: "next question" },
      { kind: "send", text: "via keyboard" },
    ]);
  });

  it("Stop says how much of the reply it shows, so the kernel keeps just that", () => {
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    const live = () => el.querySelectorAll(".mentra-live")[1].textContent ?? "";
    model.emit("msg:custom", { s: 1, t: "Shown 😀 at once" });
    model.emit("msg:custom", { s: 2, t: ", and a piece still being revealed" }); // no frame has run yet
    expect(live()).toBe("Shown 😀 at once");
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-stop")).click();
    // Code points, as Python counts them (the emoji is two UTF-16 units).
    expect(model.sent.at(-1)).toEqual({ kind: "stop", now: true, shown: 15, seq: 2 });
  });

  it("cleanup removes every listener and the DOM", () => {
    const model = new FakeModel(STATE);
    const cleanup = render({ model, el });
    expect(model.listenerCount()).toBeGreaterThan(0);
    const stop = /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-stop"));
    cleanup();
    expect(model.listenerCount()).toBe(0);
    expect(el.children.length).toBe(0);
    stop.click();
    expect(model.sent).toEqual([{ kind: "hello" }]);
  });
});

describe("AgentView during Run All (issue 15.9)", () => {
  /** @type {HTMLElement} */
  let el;
  beforeEach(() => {
    el = document.createElement("div");
    document.body.replaceChildren(el);
  });

  it("renders what the kernel sent before the view existed, without asking", () => {
    const model = new FakeModel(STATE);
    initialize({ model });
    transcript(model); // sent when the kernel displayed the view
    model.emit("msg:custom", { s: 2, t: "streaming on" });
    render({ model, el });
    expect(el.querySelector("strong")?.textContent).toBe("done");
    expect(el.querySelector(".mentra-live:not(.mentra-thinking)")?.textContent).toBe("streaming on");
    expect(model.sent).toEqual([]); // no hello: a busy kernel would answer it only after Run All
  });

  it("a second view of the same model shows the same transcript and follows it", () => {
    const model = new FakeModel(STATE);
    const disposeModel = initialize({ model });
    transcript(model);
    const first = document.createElement("div");
    const second = document.createElement("div");
    el.append(first, second);
    const cleanupFirst = render({ model, el: first });
    render({ model, el: second });
    model.emit("msg:custom", { kind: "items", seq: 2, start: 4,
      items: [{ index: 4, role: "user", kind: "text", html: "<p>more</p>" }] });
    for (const view of [first, second]) {
      // The messages' own text (each is followed by its Fork / Edit actions).
      const shown = [...view.querySelectorAll(".mentra-transcript .mentra-item")].map((n) => n.textContent);
      expect(shown.join("")).toMatch(/hello.*done.*more$/);
    }
    cleanupFirst();
    disposeModel();
    expect(model.handlers.get("msg:custom")?.size ?? 0).toBe(0); // the model's stream let go
  });
});

describe("AgentView following the transcript", () => {
  it("scrolls to the bottom once per frame, however many messages came, not once per message", async () => {
    // Reading scrollHeight after a change lays the whole page out: a tool call's dozen
    // messages each did so, and the kernel's next message (a run_cell request) waited.
    const model = new FakeModel(STATE);
    const disposeModel = initialize({ model });
    transcript(model);
    const el = document.createElement("div");
    document.body.append(el);
    const cleanup = render({ model, el });
    const scroll = /** @type {HTMLElement} */ (el.querySelector(".mentra-scroll"));
    let reads = 0;
    Object.defineProperty(scroll, "scrollHeight", { configurable: true, get: () => { reads += 1; return 500; } });
    await new Promise((resolve) => requestAnimationFrame(resolve)); // (what rendering scheduled)
    reads = 0;
    scroll.scrollTop = 0;
    for (let i = 0; i < 6; i++) {
      model.emit("msg:custom", { kind: "items", seq: 2 + i, start: 4 + i,
        items: [{ index: 4 + i, role: "assistant", kind: "text", html: `<p>more ${i}</p>` }] });
    }
    expect(reads).toBe(0); // nothing laid out while the messages are handled
    await new Promise((resolve) => requestAnimationFrame(resolve));
    expect(reads).toBe(1);
    expect(scroll.scrollTop).toBe(500);
    cleanup();
    disposeModel();
    el.remove();
  });
});

describe("LiveStream", () => {
  it("rejects messages without a sequence number or of an unknown kind", () => {
    const live = new LiveStream();
    expect(live.apply(/** @type {any} */ ({ kind: "reset", text: "x" }))).toBe("");
    expect(live.apply(/** @type {any} */ ({ kind: "delta", seq: 1, text: "x" }))).toBe(""); // the old long form
    expect(live.apply(/** @type {any} */ ({ kind: "evil", seq: 1, text: "x" }))).toBe("");
    expect(live.text).toBe("");
  });

  it("refuses items that would leave a gap in the transcript", () => {
    const live = new LiveStream();
    expect(live.apply({ kind: "items", seq: 1, start: 2, items: ITEMS })).toBe("resync");
    expect(live.items).toEqual([]);
  });
});

describe("resolveHtml", () => {
  it("escapes every span, so a span never injects markup", () => {
    expect(resolveHtml(["<p>", [0, 0, 6], "</p>", [1, 1, 3]], ['<b>"x"</b>', "abcd"]))
      .toBe("<p>&lt;b&gt;&quot;x&quot;</p>bc");
  });
});

describe("AgentView approvals", () => {
  /** @type {HTMLElement} */
  let el;
  beforeEach(() => {
    el = document.createElement("div");
    document.body.replaceChildren(el);
  });

  const WAITING = {
    ...STATE,
    status: { name: "executing_tool", tool_id: "c1", tool_name: "write_file" },
    approvals: [
      { id: "c1", name: "write_file", input: '{\n  "path": "notes.md"\n}' },
      { id: "c2", name: "shell", input: '{\n  "command": "ls"\n}' },
    ],
  };
  /** @param {string} id @param {string} selector */
  const button = (id, selector) =>
    /** @type {HTMLButtonElement} */ (el.querySelector(`.mentra-approval[data-id="${id}"] ${selector}`));

  it("shows each paused call with its input and says what the run waits for", () => {
    render({ model: new FakeModel(WAITING), el });
    const boxes = el.querySelectorAll(".mentra-approval");
    expect(boxes.length).toBe(2);
    expect(boxes[0].querySelector(".mentra-name")?.textContent).toBe("write_file wants to run");
    expect(boxes[0].querySelector("pre")?.textContent).toContain('"path": "notes.md"');
    expect(el.querySelector(".mentra-badge")?.textContent).toBe("waiting for approval: write_file, shell");
    expect(el.querySelector(".mentra-badge")?.getAttribute("data-status")).toBe("waiting");
  });

  it("sends approve, always allow and deny with the typed reason", () => {
    const model = new FakeModel(WAITING);
    render({ model, el });
    button("c1", ".mentra-always").click();
    const reason = /** @type {HTMLInputElement} */ (el.querySelector('.mentra-approval[data-id="c2"] .mentra-reason'));
    reason.value = "  not on my machine  ";
    button("c2", ".mentra-deny").click();
    expect(model.sent.slice(1)).toEqual([
      { kind: "approve", call_id: "c1", always: true },
      { kind: "deny", call_id: "c2", reason: "not on my machine" },
    ]);
  });

  it("a plain approve, and Enter in the reason box denies", () => {
    const model = new FakeModel(WAITING);
    render({ model, el });
    button("c1", ".mentra-approve").click();
    const reason = /** @type {HTMLInputElement} */ (el.querySelector('.mentra-approval[data-id="c2"] .mentra-reason'));
    reason.value = "no";
    reason.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(model.sent.slice(1)).toEqual([
      { kind: "approve", call_id: "c1", always: false },
      { kind: "deny", call_id: "c2", reason: "no" },
    ]);
  });

  it("an answered box sends once, however often it is clicked", () => {
    const model = new FakeModel(WAITING);
    render({ model, el });
    const approve = button("c1", ".mentra-approve");
    approve.click();
    approve.click();
    button("c1", ".mentra-deny").click();
    expect(model.sent.slice(1)).toEqual([{ kind: "approve", call_id: "c1", always: false }]);
    expect(button("c1", ".mentra-always").disabled).toBe(true);
  });

  it("boxes follow the approvals trait and the badge returns to the status", () => {
    const model = new FakeModel(WAITING);
    render({ model, el });
    model.set("approvals", []);
    expect(el.querySelectorAll(".mentra-approval").length).toBe(0);
    expect(el.querySelector(".mentra-badge")?.textContent).toBe("running write_file");
  });

  it("cleanup removes the approval listeners too", () => {
    const model = new FakeModel(WAITING);
    const cleanup = render({ model, el });
    const approve = button("c1", ".mentra-approve");
    cleanup();
    approve.click();
    expect(model.sent).toEqual([{ kind: "hello" }]);
    expect(model.listenerCount()).toBe(0);
  });
});

describe("AgentView cut turns", () => {
  it("shows a rolled-back turn with a Replay button, and nothing once it is gone", () => {
    const el = document.createElement("div");
    const model = new FakeModel({ ...STATE, status: { name: "interrupted" }, resumable: { kind: "replay", text: "word0 word1" } });
    render({ model, el });
    expect(el.querySelector(".mentra-resumable")?.textContent).toContain("“word0 word1”");
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-resume")).click();
    expect(model.sent.at(-1)).toEqual({ kind: "resume" });
    model.set("resumable", { kind: "continue" });
    expect(el.querySelector(".mentra-resume")?.textContent).toBe("Continue");
    model.set("resumable", {});
    expect(el.querySelector(".mentra-resume")).toBeNull();
  });
});

describe("AgentView after its kernel stopped", () => {
  it("says so, disables its controls and keeps what had streamed (issue 30.2)", () => {
    const el = document.createElement("div");
    const model = new FakeModel({ ...STATE, status: { name: "streaming" } });
    render({ model, el });
    model.emit("msg:custom", { s: 1, t: "half a sen" });
    model.emit("comm_live_update");
    expect(el.querySelector(".mentra-agent")?.getAttribute("data-connected")).toBe("false");
    expect(el.querySelector(".mentra-badge")?.textContent).toBe("disconnected");
    expect([...el.querySelectorAll("button")].every((b) => /** @type {HTMLButtonElement} */ (b).disabled)).toBe(true);
    expect(el.textContent).toContain("%mentra resume");
    expect(el.querySelectorAll(".mentra-live")[1].textContent).toBe("half a sen");
  });
});

describe("AgentView MCP calls", () => {
  it("names an MCP tool's server, and shows a running call's progress in the badge", () => {
    const el = document.createElement("div");
    const model = new FakeModel({
      ...STATE,
      status: { name: "executing_tool", tool_id: "c1", tool_name: "mcp__every__trigger-long-running-operation" },
    });
    render({ model, el });
    transcript(model, 1, [
      { index: 0, role: "assistant", kind: "tool_use", id: "c1", name: "mcp__time__get_current_time", input: "{}" },
    ]);
    expect(el.querySelector(".mentra-tool summary")?.textContent).toBe("tool call: get_current_time · MCP time");
    const badge = () => el.querySelector(".mentra-badge")?.textContent;
    expect(badge()).toBe("running trigger-long-running-operation · MCP every");
    model.set("progress", "2/3");
    expect(badge()).toBe("running trigger-long-running-operation · MCP every: 2/3");
    model.set("progress", "");
    model.set("status", { name: "executing_tool", tool_id: "c2", tool_name: "grep" });
    expect(badge()).toBe("running grep");
    model.set("approvals", [{ id: "c3", name: "mcp__git__git_add", input: "{}" }]);
    expect(badge()).toBe("waiting for approval: git_add · MCP git");
    expect(el.querySelector(".mentra-approval .mentra-name")?.textContent).toBe("git_add · MCP git wants to run");
  });
});
