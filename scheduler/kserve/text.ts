// Small helpers for the codec's error texts: they echo client strings, so they clip them, and they name
// the field at fault as it reads in the request.

const MAX_ECHO_CHARS = 64;

export function clip(s: string): string {
  return s.length > MAX_ECHO_CHARS ? `${s.slice(0, MAX_ECHO_CHARS)}...` : s;
}

/** A client value as an error text shows it: short, and never throws (JSON.stringify may, on deep values). */
export function show(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(clip(v));
    case 'number':
    case 'boolean':
      return String(v);
    case 'undefined':
      return 'nothing';
    default:
      return 'an object';
  }
}

export const dims = (shape: readonly number[]): string => `[${shape.join(',')}]`;

/** zod's path as the field reads in the request: `inputs[0].shape[2]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`;
  return out || '(body)';
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Flattens nested JSON arrays in row-major order (the protocol allows flat or nested `data`; like
 * Triton, the nesting is not checked against the shape, only the element count). Iterative: a
 * client can nest deeper than the call stack.
 */
export function flatten(data: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  const stack: { items: readonly unknown[]; next: number }[] = [{ items: data, next: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.next === top.items.length) {
      stack.pop();
      continue;
    }
    const x = top.items[top.next++];
    if (Array.isArray(x)) stack.push({ items: x as unknown[], next: 0 });
    else out.push(x);
  }
  return out;
}
