import { EventEmitter } from 'node:events';
import { shedGate } from './shed.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A response as the kit reads it: `destroyed`, and its 'finish' and 'close' events. */
const response = () => Object.assign(new EventEmitter(), { destroyed: false });

test("a response's slot comes back when the turn it finished in ends: a turn that runs its requests one after another sheds past the limit", async () => {
  const gate = shedGate({ limit: { initial: 2, min: 2, max: 2 }, reserve: { critical: 0, normal: 0 }, eventLoopDelay: () => 0 });
  // One turn reads five requests and runs each to its end before the next, as a handler that works synchronously does.
  const admitted: unknown[] = [];
  for (let i = 0; i < 5; i++) {
    const raw = response();
    const ok = gate.admit({}, raw);
    admitted.push(ok);
    if (ok) raw.emit('finish');
  }
  expect(admitted).toEqual([true, true, false, false, false]);
  expect(gate.shedder.inFlight).toBe(2);
  await turn();
  expect(gate.shedder.inFlight).toBe(0);
  expect(gate.admit({}, response())).toBe(true);
  gate.shedder.close();
});
