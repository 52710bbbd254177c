// A stand-in for anywidget's model in unit tests: traits in a Map, events by name,
// and every message the view sends recorded. (Not shipped to the browser.)

export class FakeModel {
  /** @param {Record<string, any>} traits */
  constructor(traits) {
    this.traits = new Map(Object.entries(traits));
    /** @type {Map<string, Set<(...args: any[]) => void>>} */
    this.handlers = new Map();
    /** @type {object[]} */
    this.sent = [];
  }

  /** @param {string} name */
  get(name) {
    return this.traits.get(name);
  }

  /** @param {string} name @param {any} value */
  set(name, value) {
    this.traits.set(name, value);
    this.emit(`change:${name}`);
  }

  /** @param {string} event @param {(...args: any[]) => void} handler */
  on(event, handler) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)?.add(handler);
  }

  /** @param {string} event @param {(...args: any[]) => void} handler */
  off(event, handler) {
    this.handlers.get(event)?.delete(handler);
  }

  /** @param {string} event @param {...any} args */
  emit(event, ...args) {
    for (const handler of this.handlers.get(event) ?? []) handler(...args);
  }

  /** @param {object} content */
  send(content) {
    this.sent.push(content);
  }

  listenerCount() {
    let count = 0;
    for (const set of this.handlers.values()) count += set.size;
    return count;
  }
}
