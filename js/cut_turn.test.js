import { describe, expect, it } from "vitest";
import { cutTurnMarkdown, fenced, keepCutTurn } from "./cut_turn.js";
import { VIEW_MIME } from "./saved_state.js";

describe("fenced", () => {
  it("keeps any text inert, backticks included", () => {
    expect(fenced("plain")).toBe("```text\nplain\n```");
    expect(fenced("a ```` b", "json")).toBe("`````json\na ```` b\n`````");
  });
});

describe("cutTurnMarkdown", () => {
  it("says the restart cut the turn and keeps the prompt and what had streamed", () => {
    const markdown = cutTurnMarkdown({ agent: "writer", generation: 3, streamed: {
      items: [{ index: 0, role: "user", kind: "text", html: "<p>Tell me about <strong>tide</strong> pools</p>" }],
      text: "Tide pools hold <script>x</script> [a](javascript:x)", thinking: "" } });
    expect(markdown).toContain("**writer** · turn 3 · *cut by a kernel restart*");
    expect(markdown).toContain("```text\nTell me about tide pools\n```");
    expect(markdown).toContain("```text\nTide pools hold <script>x</script> [a](javascript:x)\n```");
    expect(markdown).toContain("`agent.resume()` replays this turn");
  });

  it("says so when nothing had streamed", () => {
    const markdown = cutTurnMarkdown({ agent: "w", generation: 1, streamed: { items: [], text: "", thinking: "" } });
    expect(markdown).toContain("*no reply had streamed yet");
  });
});

describe("keepCutTurn", () => {
  const setup = (traits, live = true) => {
    const handlers = {};
    const saves = [];
    const outputs = [{ data: { [VIEW_MIME]: { model_id: "turn1" } } }, { data: { "text/plain": "x" } }];
    const cell = { outputs: { get length() { return outputs.length; }, get: (i) => outputs[i],
      set: (i, value) => { outputs[i] = value; } } };
    const state = { turn1: { state: { _mentra_view: "agent", agent_name: "writer", scope: { kind: "turn", first: 2 },
      run_generation: 2 } }, full: { state: { _mentra_view: "agent", agent_name: "writer", scope: {} } } };
    const manager = { context: { model: { cells: [cell] }, save: async () => { saves.push(true); } },
      get_state_sync: () => ({ state }) };
    const model = { get: (key) => traits[key], on: (name, fn) => { handlers[name] = fn; },
      off: (name) => { delete handlers[name]; }, widget_manager: manager };
    keepCutTurn(model, () => ({ items: [], text: live ? "half a reply" : "", thinking: "" }));
    return { handlers, outputs, saves };
  };
  const running = { agent_name: "writer", scope: { kind: "turn", first: 2 }, run_generation: 2,
    status: { name: "streaming" } };

  it("turns a running turn's output into its markdown when its kernel goes, and saves", () => {
    const { handlers, outputs, saves } = setup(running);
    handlers["msg:custom"](); // learnt while the kernel lives
    handlers.comm_live_update();
    expect(outputs[0].data["text/markdown"]).toContain("half a reply");
    expect(outputs[0].data[VIEW_MIME]).toBeUndefined();
    expect(outputs[1].data).toEqual({ "text/plain": "x" });
    expect(saves).toHaveLength(1);
    handlers.comm_live_update(); // reported twice: done once
    expect(saves).toHaveLength(1);
  });

  it("leaves a finished turn and a full view alone", () => {
    for (const traits of [{ ...running, status: { name: "finished" } }, { ...running, scope: {} }]) {
      const { handlers, outputs, saves } = setup(traits);
      handlers.comm_live_update();
      expect(outputs[0].data[VIEW_MIME]).toEqual({ model_id: "turn1" });
      expect(saves).toHaveLength(0);
    }
  });
});
