// Issue 33.20: bidi controls and zero-width characters in code a model wrote are
// marked visibly in the views (mentra_nb/notebook/_hidden_characters.py marks
// the same set in cells `-f code` writes).
import { beforeEach, describe, expect, it } from "vitest";
import { FakeModel } from "./fake_model.js";
import agentView from "./agent_view.js";
import { approvalBox, markHidden } from "./dom.js";

const STATE = {
  agent_name: "writer", model_key: "test:default", status: { name: "finished" }, run_generation: 1,
  usage: { input_tokens: 1, output_tokens: 1 }, cost: "", pending_tools: [],
};
// Trojan Source: reads as a comment, runs as a condition.
const TROJAN = 'if access_level != "user\u202E \u2066# Check if admin\u2069 \u2066":';
const MARKED = 'if access_level != "user<U+202E> <U+2066># Check if admin<U+2069> <U+2066>":';

/** @param {Element} node */
const badges = (node) => [...node.querySelectorAll(".mentra-hidden-char")].map((b) => b.textContent);

describe("hidden characters", () => {
  /** @type {HTMLElement} */
  let el;
  beforeEach(() => {
    el = document.createElement("div");
    document.body.replaceChildren(el);
  });

  it("are badges in code blocks, inline code, tool calls and results", () => {
    const model = new FakeModel(STATE);
    agentView.render({ model, el });
    const escaped = TROJAN.replace(/"/g, "&quot;");
    model.emit("msg:custom", { kind: "items", seq: 1, start: 0, items: [
      { index: 0, role: "assistant", kind: "text",
        html: `<p>see <code>a\u200Bb</code></p><pre><code class="language-python" data-hl="k:2 ${TROJAN.length - 2}">${escaped}</code></pre>` },
      { index: 1, role: "assistant", kind: "tool_use", id: "t1", name: "shell", input: `{"cmd": "rm -rf /tmp/x\u202E"}` },
      { index: 2, role: "user", kind: "tool_result", id: "t1", content: "ok\uFEFF" },
    ] });
    const block = /** @type {HTMLElement} */ (el.querySelector("pre code"));
    expect(block.textContent).toBe(MARKED);
    expect(block.querySelector("span.k")?.textContent).toBe("if"); // highlighted, then marked
    expect(badges(block)).toEqual(["<U+202E>", "<U+2066>", "<U+2069>", "<U+2066>"]);
    expect(el.querySelector("p code")?.textContent).toBe("a<U+200B>b");
    const tool = /** @type {HTMLElement} */ (el.querySelector("details.mentra-tool"));
    expect(badges(tool)).toEqual(["<U+202E>", "<U+FEFF>"]);
    // The badges are elements the view made: the text around them stays text.
    expect(block.querySelector(".mentra-hidden-char")?.getAttribute("title")).toContain("U+202E");
  });

  it("are marked in the call an approval box shows", () => {
    const box = approvalBox({ id: "c1", title: "shell", input: "echo hi\u2067", alwaysTitle: "" }, () => {},
      new AbortController().signal);
    expect(box.querySelector("pre")?.textContent).toBe("echo hi<U+2067>");
  });

  it("leave emoji sequences, accents and right-to-left text alone", () => {
    const text = "\u{1F468}\u200D\u{1F469}\u200D\u{1F467} caf\u00E9 \u05E9\u05DC\u05D5\u05DD x\u200Dy";
    const node = document.createElement("code");
    node.textContent = text;
    markHidden(node);
    expect(node.textContent).toBe("\u{1F468}\u200D\u{1F469}\u200D\u{1F467} caf\u00E9 \u05E9\u05DC\u05D5\u05DD x<U+200D>y");
  });
});
