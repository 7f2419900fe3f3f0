// The page's one state object and the only way to change it: named actions.
//
//   const store = createStore(state, actions)
//   store.state            the object itself (read it anywhere; never assign to it outside an action)
//   store.act.NAME(...a)   runs actions.NAME(state, ...a); unless it returned false ("nothing
//                          changed"), every subscriber is then called with (NAME, state)
//   store.subscribe(cb)    cb(name, state) after every change; returns an unsubscribe function
//
// An action that is called while subscribers run (a subscriber reacting to one change) is
// queued and runs after them, so subscribers always see one finished change at a time.

export function createStore(state, actions) {
  const listeners = new Set();
  const queue = [];
  let running = false;
  const run = (name, args) => {
    queue.push([name, args]);
    if (running) return undefined;
    running = true;
    let out;
    try {
      while (queue.length) {
        const [n, a] = queue.shift();
        const result = actions[n](state, ...a);
        if (n === name && a === args) out = result;
        if (result !== false) for (const cb of [...listeners]) cb(n, state);
      }
    } finally {
      running = false;
    }
    return out;
  };
  const act = {};
  for (const name of Object.keys(actions)) act[name] = (...args) => run(name, args);
  return {
    state,
    act,
    subscribe(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
  };
}
