// Triton's shared-memory routes over HTTP (the system shared-memory extension, and the CUDA one as a
// Triton built without GPU support answers it), on the scheduler's Fastify app. The registry and its
// checks are scheduler/sharedMemory.ts; registered once by SchedulerService.start.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  isLocalPeer,
  NOT_LOCAL,
  parseRegisterBody,
  type SharedMemoryRegistry,
  type ShmResult,
} from './sharedMemory.js';

/**
 * Triton's CUDA shared-memory routes as a Triton built without GPU support answers them
 * (src/http_server.cc HandleCudaSharedMemory, shared_memory_manager.cc, TRITON_ENABLE_GPU off): the
 * status of all regions is an empty list; unregistering one region or all succeeds (there is nothing
 * to unregister); registering fails with Triton's text, plus what to use instead. So a client that
 * clears both kinds of regions first, as Triton's shared-memory examples do, goes on to its system
 * shared-memory path. One difference: the status of a named region is 404 (inss's system
 * shared-memory route answers an unknown region so), where Triton answers 400. Pure.
 */
export function cudaSharedMemoryAnswer(
  action: 'status' | 'register' | 'unregister',
  name?: string,
): { status: 200 | 400 | 404; body: unknown } {
  const shown = name === undefined ? '' : name.slice(0, 128);
  switch (action) {
    case 'status':
      if (name === undefined) return { status: 200, body: [] };
      return {
        status: 404,
        body: {
          error:
            `no CUDA shared memory region '${shown}' is registered ` +
            `(this server does not support CUDA shared memory)`,
        },
      };
    case 'register':
      return {
        status: 400,
        body: {
          error:
            `failed to register CUDA shared memory region: '${shown}', GPUs not supported: CUDA shared memory is ` +
            `not supported by this server; use system shared memory (POST ` +
            `/v2/systemsharedmemory/region/${shown}/register with a POSIX shared-memory key)`,
        },
      };
    case 'unregister':
      return { status: 200, body: undefined };
  }
}

/**
 * Registers the extension's routes: POST /v2/systemsharedmemory/region/{name}/register,
 * GET /v2/systemsharedmemory[/region/{name}]/status, POST /v2/systemsharedmemory[/region/{name}]/unregister.
 * Every route answers 403 to a client that is not on this host. Also Triton's /v2/cudasharedmemory
 * routes, answered as cudaSharedMemoryAnswer says (from any address: they touch nothing).
 */
export function registerSharedMemoryRoutes(app: FastifyInstance, registry: SharedMemoryRegistry): void {
  const send = (reply: FastifyReply, status: number, body: unknown) =>
    reply
      .code(status)
      .header('content-type', 'application/json')
      .send(body === undefined ? '' : JSON.stringify(body));
  const answer = <T>(reply: FastifyReply, r: ShmResult<T>, ok: (v: T) => unknown) =>
    r.ok ? send(reply, 200, ok(r.value)) : send(reply, r.status, { error: r.error });
  const local = (req: FastifyRequest, reply: FastifyReply): boolean => {
    if (isLocalPeer(req.socket.remoteAddress)) return true;
    void send(reply, 403, { error: NOT_LOCAL });
    return false;
  };
  type Named = { Params: { name: string } };
  app.post<Named>('/v2/systemsharedmemory/region/:name/register', (req, reply) => {
    if (!local(req, reply)) return reply;
    const body = parseRegisterBody(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
    if (!body.ok) return answer(reply, body, () => undefined);
    return answer(
      reply,
      registry.register(req.params.name, body.value.key, body.value.offset, body.value.byte_size),
      () => undefined,
    );
  });
  app.get('/v2/systemsharedmemory/status', (req, reply) =>
    local(req, reply) ? answer(reply, registry.status(), (v) => v) : reply,
  );
  app.get<Named>('/v2/systemsharedmemory/region/:name/status', (req, reply) =>
    local(req, reply) ? answer(reply, registry.status(req.params.name), (v) => v) : reply,
  );
  app.post('/v2/systemsharedmemory/unregister', (req, reply) => {
    if (!local(req, reply)) return reply;
    registry.unregister();
    return send(reply, 200, undefined);
  });
  app.post<Named>('/v2/systemsharedmemory/region/:name/unregister', (req, reply) => {
    if (!local(req, reply)) return reply;
    registry.unregister(req.params.name);
    return send(reply, 200, undefined);
  });

  const cuda = (reply: FastifyReply, a: ReturnType<typeof cudaSharedMemoryAnswer>) => send(reply, a.status, a.body);
  app.get('/v2/cudasharedmemory/status', (_req, reply) => cuda(reply, cudaSharedMemoryAnswer('status')));
  app.get<Named>('/v2/cudasharedmemory/region/:name/status', (req, reply) =>
    cuda(reply, cudaSharedMemoryAnswer('status', req.params.name)),
  );
  app.post<Named>('/v2/cudasharedmemory/region/:name/register', (req, reply) =>
    cuda(reply, cudaSharedMemoryAnswer('register', req.params.name)),
  );
  app.post('/v2/cudasharedmemory/unregister', (_req, reply) => cuda(reply, cudaSharedMemoryAnswer('unregister')));
  app.post<Named>('/v2/cudasharedmemory/region/:name/unregister', (req, reply) =>
    cuda(reply, cudaSharedMemoryAnswer('unregister', req.params.name)),
  );
}
