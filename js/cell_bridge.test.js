import { describe, expect, it } from "vitest";
import { outputJson, unavailableReason } from "./cell_bridge.js";
import { changedCell, markCells } from "./cell_marks.js";

describe("outputJson", () => {
  it("reads an error as its name, value and a traceback without terminal colours", () => {
    const output = outputJson({ output_type: "error", ename: "ValueError", evalue: "boom",
      traceback: ["\u001b[0;31mValueError\u001b[0m: boom"] }, false);
    expect(output).toEqual({ kind: "error", text: "ValueError: boom\nValueError: boom", images: [] });
  });

  it("says which images an output shows, with their data only when asked", () => {
    const display = { output_type: "display_data", data: { "image/png": "iVBOR", "text/plain": "<Figure>" } };
    expect(outputJson(display, false)).toEqual({ kind: "display", text: "<Figure>",
      images: [{ mime: "image/png", data: null }] });
    expect(outputJson(display, true)?.images).toEqual([{ mime: "image/png", data: "iVBOR" }]);
  });
});

describe("unavailableReason", () => {
  it("names what is missing where a front end gives widgets no notebook document", () => {
    expect(unavailableReason(undefined)).toMatch(/JupyterLab 4 or Notebook 7/);
    expect(unavailableReason({ model: { cells: [] } })).toMatch(/cannot be edited/);
  });
});

describe("changedCell", () => {
  it("finds the cell of an edit in its input and of an insert in its result, and none for a read", () => {
    expect(changedCell("edit_cell", '{"cell": "abc", "old": "a", "new": "b"}', "edited cell abc")).toBe("abc");
    expect(changedCell("insert_cell", "{}", "inserted markdown cell 7f3e at position 4")).toBe("7f3e");
    expect(changedCell("read_notebook", "{}", "notebook: 3 cells")).toBe("");
  });
});

describe("markCells", () => {
  it("badges the cells whose metadata names an agent, tags every cell with its id, and unbadges a cell whose mark went", () => {
    const metadata = [{ mentra: { agent: "writer", run: 2 } }, {}];
    const cells = [0, 1].map((i) => ({ id: `c${i}`, getMetadata: (/** @type {string} */ key) => metadata[i][key] }));
    const notebook = { cells: { length: 2, get: (/** @type {number} */ i) => cells[i] } };
    const root = document.createElement("div");
    root.innerHTML = '<div class="jp-Cell"><div class="jp-Cell-inputWrapper"></div></div><div class="jp-Cell"></div>';
    markCells(notebook, root);
    const badges = root.querySelectorAll(".mentra-cell-badge");
    expect(badges.length).toBe(1);
    expect(badges[0].textContent).toBe("✦ writer");
    expect(/** @type {HTMLElement} */ (badges[0]).title).toMatch(/run 2/);
    expect([...root.querySelectorAll(".jp-Cell")].map((n) => /** @type {HTMLElement} */ (n).dataset.mentraCellId))
      .toEqual(["c0", "c1"]);
    metadata[0] = {};
    markCells(notebook, root);
    expect(root.querySelectorAll(".mentra-cell-badge").length).toBe(0);
  });
});
