import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

interface FrontDoorJson {
  frontDoors: number;
  results: { policy: string; arrivals: number; served: number; dropped: number; unfinished: number }[];
}

describe('inss bench --front-doors', () => {
  it('runs the scenario behind that many doors, every task accounted for; refuses a count beyond 64', async () => {
    const args = ['bench', '--scenario', 'v100-2-tight', '--policies', 'inss', '--json', '--jobs', '1'];
    const [one, two] = await Promise.all([runCli(args), runCli([...args, '--front-doors', '2'])]);
    expect(one.code, one.stderr).toBe(0);
    expect(two.code, two.stderr).toBe(0);
    const [a, b] = [one, two].map((r) => JSON.parse(r.stdout) as FrontDoorJson);
    expect([a!.frontDoors, b!.frontDoors]).toEqual([1, 2]);
    const r = b!.results[0]!;
    expect(r.arrivals).toBe(a!.results[0]!.arrivals);
    expect(r.arrivals).toBe(r.served + r.dropped + r.unfinished);
    expect(r.served).toBeGreaterThan(0.9 * r.arrivals);
    const bad = await runCli([...args, '--front-doors', '65']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--front-doors <n>' argument '65' is invalid\. must be an integer from 1 to 64/);
  }, 120_000);
});
