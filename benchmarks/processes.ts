// Helpers of the benchmarks that drive `inss` as processes (system.ts, twin.ts).

/** Polls `get()` (a process's output so far) until `re` matches; returns its first group. */
export async function waitFor(get: () => string, re: RegExp, ms = 60_000): Promise<string> {
  const t0 = Date.now();
  for (;;) {
    const m = re.exec(get());
    if (m) return m[1]!;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${re}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
