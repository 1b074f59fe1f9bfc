// A stable 32-bit hash of a string (FNV-1a over UTF-16 code units): the same name gives the same number
// in every process, whatever order things were listed in. Pure.
export function stableHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
