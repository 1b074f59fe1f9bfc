// The link thread of the scheduler service: the direct path's sockets to workers on an event loop of
// their own (scheduler/workerLink.ts says why and sends the work). Answers go back to the scheduler as
// whole frames, each payload in a buffer of its own size, handed over (transferred), not copied again.
import { parentPort } from 'node:worker_threads';
import { type FromLinkThread, SocketLinks, type ToLinkThread } from './workerLink.js';

if (!parentPort) throw new Error('workerLinkThread.ts runs as a worker thread of the scheduler service');
const port = parentPort;
const post = (m: FromLinkThread, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

const links = new SocketLinks({
  connected: (cid) => post({ ev: 'connected', cid }),
  frame: (cid, header, payload) => {
    const own = new Uint8Array(payload);
    post({ ev: 'frame', cid, header, payload: own }, [own.buffer]);
  },
  closed: (cid, why, connected) => post({ ev: 'closed', cid, why, connected }),
});

port.on('message', (m: ToLinkThread) => {
  switch (m.op) {
    case 'open':
      return links.open(m.cid, m.address, m.secret, m.shm);
    case 'send':
      return links.send(m.cid, m.head, m.parts);
    case 'close':
      return links.close(m.cid);
    case 'destroy':
      return links.destroy(m.cid);
  }
});
