// The text-format parser (src/repository/pbtxt.ts): every form config.pbtxt files are written in, and
// errors that name the line, the column and what was expected.
import { describe, expect, it } from 'vitest';
import { type PbMessage, type PbValue, parsePbtxt, PbtxtError } from '../../src/repository/pbtxt.js';

/** The tree without positions: messages as [name, value] lists, scalars as their values. */
function plain(v: PbValue | PbMessage): unknown {
  if (v.kind === 'message') return v.fields.map((f) => [f.name, plain(f.value)]);
  if (v.kind === 'identifier') return { id: v.value };
  return v.value;
}

function errorOf(text: string): string {
  try {
    parsePbtxt(text);
  } catch (e) {
    expect(e).toBeInstanceOf(PbtxtError);
    return (e as Error).message;
  }
  throw new Error('parsed without error');
}

describe('parsePbtxt', () => {
  it('reads scalars, messages in { } and < >, with or without a colon', () => {
    const m = parsePbtxt('name: "a"\nmax_batch_size : 8\nv { x: 1 }\nw: < y: TYPE_FP32 >\n');
    expect(plain(m)).toEqual([
      ['name', 'a'],
      ['max_batch_size', 8],
      ['v', [['x', 1]]],
      ['w', [['y', { id: 'TYPE_FP32' }]]],
    ]);
  });

  it('reads repeated fields one by one, as lists of scalars, and as lists of messages', () => {
    const m = parsePbtxt('dims: [ 3, 224, 224 ]\ndims: 5\ninput [ { name: "a" }, { name: "b" } ]\ninput { name: "c" }');
    expect(plain(m)).toEqual([
      ['dims', 3],
      ['dims', 224],
      ['dims', 224],
      ['dims', 5],
      ['input', [['name', 'a']]],
      ['input', [['name', 'b']]],
      ['input', [['name', 'c']]],
    ]);
    expect(plain(parsePbtxt('dims: []'))).toEqual([]);
  });

  it('reads numbers: negative, hex, octal, floats with exponents and suffixes, inf and nan', () => {
    const m = parsePbtxt('a: -1 b: 0x1F c: 017 d: 1.5 e: -2e-3 f: .5 g: 3f h: inf i: -inf j: nan k: 1.');
    const values = m.fields.map((f) => (f.value.kind === 'number' ? f.value.value : null));
    expect(values).toEqual([-1, 31, 15, 1.5, -0.002, 0.5, 3, Infinity, -Infinity, NaN, 1]);
    const integer = m.fields.map((f) => f.value.kind === 'number' && f.value.integer);
    expect(integer).toEqual([true, true, true, false, false, false, false, false, false, false, false]);
  });

  it('reads strings in either quote, with escapes, and joins adjacent strings', () => {
    const m = parsePbtxt(String.raw`a: 'it''s' b: "q\"\n\t\\" c: "\x41\101" d: "caf\303\251" e: 'x' "y"`);
    expect(plain(m)).toEqual([
      ['a', 'its'],
      ['b', 'q"\n\t\\'],
      ['c', 'AA'],
      ['d', 'café'],
      ['e', 'xy'],
    ]);
  });

  it('skips comments and takes , or ; after a field', () => {
    const m = parsePbtxt('# a model\nname: "a", # the name\nmax_batch_size: 1;\ninput { name: "x"; dims: 1, }\n');
    expect(plain(m)).toEqual([
      ['name', 'a'],
      ['max_batch_size', 1],
      [
        'input',
        [
          ['name', 'x'],
          ['dims', 1],
        ],
      ],
    ]);
  });

  it('records where each field and value starts', () => {
    const m = parsePbtxt('name: "a"\n  input {\n    dims: 3\n  }');
    expect(m.fields[1]!.at).toEqual({ line: 2, column: 3 });
    const inner = m.fields[1]!.value as PbMessage;
    expect(inner.fields[0]!.value.at).toEqual({ line: 3, column: 11 });
  });

  it.each([
    ['name "a"', "1:6: expected ':' or '{' after 'name', found the string \"a\""],
    ['input { name: "a"', "1:18: expected a field name or '}', found the end of the text"],
    ['input { name: "a" >', "1:19: expected a field name or '}', found '>'"],
    ['dims: [1 2]', "1:10: expected ',' or ']' in the list of 'dims', found '2'"],
    ['name: "abc', '1:7: unterminated string (expected ")'],
    ['name: "a\\qb"', "1:9: unknown escape '\\q' in a string"],
    ['a: 1\n}', "2:1: expected a field name, found '}'"],
    ['a: 1\nb: @', '2:4: unexpected character "@"'],
    ['a:', 'expected a value (a number, a string or a name), found the end of the text'],
    ['3: 4', "1:1: expected a field name, found '3'"],
  ])('refuses %j naming line:column and what was expected', (text, message) => {
    expect(errorOf(text)).toContain(message);
  });
});
