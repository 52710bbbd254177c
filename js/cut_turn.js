// A turn cut by a kernel restart (issue 30.2).
//
// A `%%mentra` cell shows its turn as a live view until the turn ends; then the
// kernel replaces the cell's output by the turn as markdown. A restart kills the
// kernel before that: nothing would replace the view, the text that had streamed
// lived only in the page, and the saved notebook kept a widget no kernel has. So
// when a running turn's model loses its kernel, the page itself turns the cell's
// output into the turn as markdown (the prompt, what had streamed, and that the
// restart cut it: the store keeps the turn interrupted and replayable) and saves
// the notebook.

import { VIEW_MIME, saveNow } from "./saved_state.js";

/**
 * @typedef {import("./dom.js").Item} Item
 * @typedef {{text: string, thinking: string, items: Item[]}} Streamed
 * @typedef {{get(key: string): any, on(name: string, fn: () => void): void,
 *   off(name: string, fn: () => void): void, widget_manager?: any}} TurnModel
 */

const RUNNING = new Set(["awaiting_model", "streaming", "executing_tool"]);

/**
 * `text` in a fenced block: shown as it is wherever markdown is read, and inert
 * (no markup, link or HTML in it takes effect), whatever it holds.
 * @param {string} text
 * @param {string} [lang]
 */
export function fenced(text, lang = "text") {
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}`;
}

/**
 * The words of a transcript item's HTML (made safe in the kernel), without markup.
 * @param {string} html
 */
function words(html) {
  // DOMParser builds an inert document: nothing in it loads or runs.
  return new DOMParser().parseFromString(html, "text/html").body.textContent?.trim() ?? "";
}

/**
 * The cut turn as markdown: what a reader of the saved notebook sees.
 * @param {{agent: string, generation: number, streamed: Streamed}} turn
 */
export function cutTurnMarkdown({ agent, generation, streamed }) {
  const parts = [`**${agent}** · turn ${generation} · *cut by a kernel restart*`];
  for (const item of streamed.items) {
    const who = item.role === "user" ? "**user**" : "**assistant**";
    if (item.kind === "text" || item.kind === "thinking") {
      parts.push(`${who}${item.kind === "thinking" ? " *(thinking)*" : ""}:`, fenced(words(item.html ?? "")));
    } else if (item.kind === "tool_use") {
      const name = String(item.name ?? "a tool").replace(/[`\n]/g, ""); // a code span nothing closes early
      parts.push(`${who} calls \`${name}\``, fenced(item.input ?? "", "json"));
    } else if (item.kind === "tool_result") {
      parts.push(`tool ${item.is_error ? "error" : "result"}:`, fenced(item.content ?? ""));
    }
  }
  const replay = "after `%mentra resume`, `agent.resume()` replays this turn";
  if (streamed.thinking) parts.push("**assistant** *(thinking, as it had streamed)*:", fenced(streamed.thinking));
  if (streamed.text) {
    parts.push(`**assistant**, as it had streamed before the restart (not kept in the transcript; ${replay}):`,
      fenced(streamed.text));
  } else {
    parts.push(`*no reply had streamed yet (${replay})*`);
  }
  return parts.join("\n\n");
}

/**
 * When `model` (a turn view) loses its kernel while its turn runs, replace every
 * output of the notebook that shows it by the turn as markdown, and save. Where
 * the manager has no document (VS Code, a static page) nothing happens.
 * @param {TurnModel} model
 * @param {() => Streamed} streamed what the page holds of the turn
 * @returns {() => void} stops watching
 */
export function keepCutTurn(model, streamed) {
  let done = false;
  // Which outputs show this model is learnt while its kernel lives: once the kernel
  // is gone the manager no longer lists the model's state.
  /** @type {Set<string>} */
  let ids = new Set();
  const learn = () => {
    if (ids.size || (model.get("scope") ?? {}).kind !== "turn") return;
    ids = modelIds(model.widget_manager, model);
    if (ids.size) model.off("msg:custom", learn);
  };
  const lost = () => {
    const manager = model.widget_manager;
    const notebook = manager?.context?.model;
    const scope = model.get("scope") ?? {};
    const status = model.get("status") ?? {};
    if (done || scope.kind !== "turn" || !RUNNING.has(status.name) || !notebook?.cells) return;
    done = true;
    learn();
    const markdown = cutTurnMarkdown({ agent: model.get("agent_name") ?? "agent",
      generation: model.get("run_generation") ?? 0, streamed: streamed() });
    const output = { output_type: "display_data", metadata: {},
      data: { "text/markdown": markdown, "text/plain": markdown } };
    let replaced = 0;
    for (const cell of notebook.cells) {
      const outputs = cell.outputs;
      for (let i = 0; outputs && i < outputs.length; i++) {
        if (ids.has(outputs.get(i).data?.[VIEW_MIME]?.model_id)) {
          outputs.set(i, output);
          replaced++;
        }
      }
    }
    if (replaced) saveNow(manager.context, "the notebook after a restart cut a turn");
  };
  model.on("msg:custom", learn);
  model.on("comm_live_update", lost);
  return () => {
    model.off("msg:custom", learn);
    model.off("comm_live_update", lost);
  };
}

/**
 * The ids of the widget models that are `model`: the proxy anywidget hands to a
 * widget's code carries no id, so its turn is matched (agent, first message, run).
 * @param {any} manager
 * @param {TurnModel} model
 */
function modelIds(manager, model) {
  /** @type {Set<string>} */
  const ids = new Set();
  const scope = model.get("scope") ?? {};
  const state = manager.get_state_sync?.({ drop_defaults: false })?.state ?? {};
  for (const [id, saved] of Object.entries(state)) {
    const s = /** @type {any} */ (saved)?.state ?? {};
    if (s._mentra_view === "agent" && s.scope?.kind === "turn" && s.scope?.first === scope.first &&
        s.agent_name === model.get("agent_name") && s.run_generation === model.get("run_generation")) {
      ids.add(id);
    }
  }
  return ids;
}
