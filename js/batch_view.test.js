import { beforeEach, describe, expect, it } from "vitest";
import batch from "./batch_view.js";
import { FakeModel } from "./fake_model.js";

const { render } = batch;

const STATE = {
  job_name: "reviews",
  progress: {
    state: "running", agent: "clf", total: 10, done: 4, running: 2, failed: 1, waiting: 3, cancelled: 0,
    tokens: 1234, cost: "$0.0120", rows_per_minute: 60, eta: "4 s", note: "", throttled: 2,
  },
  failures: [{ index: 7, agent: "reviews-7", error: "the server refused it" }],
  row: {},
  notice: "",
};

describe("BatchView", () => {
  /** @type {HTMLElement} */
  let el;
  beforeEach(() => {
    el = document.createElement("div");
    document.body.replaceChildren(el);
  });

  it("shows the counts, the bar, throughput, cost and time left", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    expect(el.querySelector(".mentra-name")?.textContent).toBe("reviews · clf");
    expect(el.querySelector(".mentra-counts")?.textContent).toBe(
      "4 done · 2 running · 1 failed · 3 waiting · of 10");
    expect(/** @type {HTMLElement} */ (el.querySelector(".mentra-bar-fill")).style.width).toBe("50%");
    const totals = el.querySelector(".mentra-batch > .mentra-model")?.textContent ?? "";
    expect(totals).toContain("$0.0120");
    expect(totals).toContain("60 rows/min");
    expect(totals).toContain("about 4 s left");
    model.set("progress", { ...STATE.progress, state: "finished", done: 9, running: 0, waiting: 0 });
    expect(/** @type {HTMLElement} */ (el.querySelector(".mentra-bar-fill")).style.width).toBe("100%");
  });

  it("opens a failed row's transcript on click and closes it", () => {
    const model = new FakeModel(STATE);
    render({ model, el });
    const failure = /** @type {HTMLElement} */ (el.querySelector("li[data-index='7']"));
    expect(failure.textContent).toContain("the server refused it");
    failure.click();
    expect(model.sent).toEqual([{ kind: "open_row", index: 7 }]);
    model.set("row", { index: 7, agent: "reviews-7",
      items: [{ index: 1, role: "user", kind: "text", html: "<p>Review: awful</p>" }] });
    expect(el.querySelector(".mentra-preview p")?.textContent).toBe("Review: awful");
    /** @type {HTMLButtonElement} */ (el.querySelector(".mentra-close")).click();
    expect(model.sent.at(-1)).toEqual({ kind: "close_row" });
    model.set("row", {});
    expect(el.querySelector(".mentra-preview")?.children.length).toBe(0);
  });
});
