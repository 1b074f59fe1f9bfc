// A parser for protocol buffers' text format, as Triton's config.pbtxt is written: messages in `{ }` or
// `< >`, the `:` before a message optional, repeated fields given one by one or as `key: [a, b]` lists
// (of scalars or of messages), `#` comments, and `,` or `;` after a field. Scalars: integers (decimal,
// hex, octal, signed), floats (`1.5`, `1e-3`, `.5`, `2f`, `inf`, `nan`), strings in '' or "" with C
// escapes (adjacent strings join), and identifiers (enum values, true/false). Pure: text in, a tree of
// fields out; what a field means is the reader's business (src/repository/config.ts). No npm package
// parses the text format on its own (protobufjs reads .proto files and JSON, not text-format messages),
// and the grammar is small.

/** Where a token starts, 1-based. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

export type PbScalar =
  | { readonly kind: 'number'; readonly text: string; readonly value: number; readonly integer: boolean }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'identifier'; readonly value: string };

export type PbValue = (PbScalar | { readonly kind: 'message'; readonly fields: readonly PbField[] }) & {
  readonly at: Position;
};

/** One field as written; a list `key: [a, b]` yields one field per element, in order. */
export interface PbField {
  readonly name: string;
  readonly at: Position;
  readonly value: PbValue;
}

export type PbMessage = Extract<PbValue, { kind: 'message' }>;

export class PbtxtError extends Error {
  constructor(
    readonly at: Position,
    readonly detail: string,
  ) {
    super(`${at.line}:${at.column}: ${detail}`);
    this.name = 'PbtxtError';
  }
}

type Token =
  | { kind: 'punct'; text: string; at: Position }
  | { kind: 'ident'; text: string; at: Position }
  | { kind: 'number'; text: string; at: Position }
  | { kind: 'string'; value: string; at: Position }
  | { kind: 'end'; at: Position };

const ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

function describe(t: Token): string {
  if (t.kind === 'end') return 'the end of the text';
  if (t.kind === 'string') return `the string ${JSON.stringify(t.value)}`;
  return `'${t.text}'`;
}

class Lexer {
  private i = 0;
  private line = 1;
  private lineStart = 0;
  private peeked: Token | null = null;

  constructor(private readonly s: string) {}

  private at(): Position {
    return { line: this.line, column: this.i - this.lineStart + 1 };
  }

  private skip(): void {
    for (;;) {
      const c = this.s[this.i];
      if (c === '\n') {
        this.i++;
        this.line++;
        this.lineStart = this.i;
      } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') this.i++;
      else if (c === '#') while (this.i < this.s.length && this.s[this.i] !== '\n') this.i++;
      else return;
    }
  }

  peek(): Token {
    this.peeked ??= this.read();
    return this.peeked;
  }

  next(): Token {
    const t = this.peek();
    this.peeked = null;
    return t;
  }

  private read(): Token {
    this.skip();
    const at = this.at();
    const s = this.s;
    if (this.i >= s.length) return { kind: 'end', at };
    const c = s[this.i]!;
    if ('{}<>[]:,;'.includes(c)) {
      this.i++;
      return { kind: 'punct', text: c, at };
    }
    if (c === '"' || c === "'") return { kind: 'string', value: this.string(c, at), at };
    const number = /^-?(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fF]?)/.exec(
      s.slice(this.i, this.i + 400),
    );
    if (number && number[0] !== '-') {
      this.i += number[0].length;
      return { kind: 'number', text: number[0], at };
    }
    const ident = /^-?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/.exec(s.slice(this.i, this.i + 400));
    if (ident) {
      this.i += ident[0].length;
      return { kind: 'ident', text: ident[0], at };
    }
    throw new PbtxtError(at, `unexpected character ${JSON.stringify(c)}`);
  }

  private string(quote: string, at: Position): string {
    const s = this.s;
    const bytes: number[] = [];
    const text = (t: string) => bytes.push(...Buffer.from(t, 'utf8'));
    this.i++;
    for (;;) {
      if (this.i >= s.length || s[this.i] === '\n') throw new PbtxtError(at, `unterminated string (expected ${quote})`);
      const c = s[this.i]!;
      if (c === quote) {
        this.i++;
        return Buffer.from(bytes).toString('utf8');
      }
      if (c !== '\\') {
        text(c);
        this.i++;
        continue;
      }
      const e = s[this.i + 1] ?? '';
      const escAt = { line: this.line, column: this.i - this.lineStart + 1 };
      if (e in ESCAPES) {
        text(ESCAPES[e]!);
        this.i += 2;
      } else if (/[xX]/.test(e) && /[0-9a-fA-F]/.test(s[this.i + 2] ?? '')) {
        const hex = /^[0-9a-fA-F]{1,2}/.exec(s.slice(this.i + 2))![0];
        bytes.push(parseInt(hex, 16));
        this.i += 2 + hex.length;
      } else if (/[0-7]/.test(e)) {
        const oct = /^[0-7]{1,3}/.exec(s.slice(this.i + 1))![0];
        bytes.push(parseInt(oct, 8) & 0xff);
        this.i += 1 + oct.length;
      } else throw new PbtxtError(escAt, `unknown escape '\\${e}' in a string`);
    }
  }
}

function numberValue(t: { text: string; at: Position }): PbScalar {
  const neg = t.text.startsWith('-');
  const body = neg ? t.text.slice(1) : t.text;
  let value: number;
  let integer = true;
  if (/^0[xX]/.test(body)) value = parseInt(body.slice(2), 16);
  else if (/^0[0-7]+$/.test(body)) value = parseInt(body, 8);
  else if (/^[0-9]+$/.test(body)) value = Number(body);
  else {
    integer = false;
    value = Number(body.replace(/[fF]$/, ''));
  }
  if (!Number.isFinite(value)) throw new PbtxtError(t.at, `'${t.text}' is not a number`);
  return { kind: 'number', text: t.text, value: neg ? -value : value, integer };
}

const FLOAT_WORDS: Readonly<Record<string, number>> = {
  inf: Infinity,
  infinity: Infinity,
  '-inf': -Infinity,
  '-infinity': -Infinity,
  nan: NaN,
  '-nan': NaN,
};

class Parser {
  constructor(private readonly lex: Lexer) {}

  /** Fields up to `close` (a punctuation mark, or the end of the text for the top level). */
  fields(close: string | null): PbField[] {
    const out: PbField[] = [];
    for (;;) {
      const t = this.lex.peek();
      if (close === null && t.kind === 'end') return out;
      if (close !== null && t.kind === 'punct' && t.text === close) {
        this.lex.next();
        return out;
      }
      if (t.kind !== 'ident' || t.text.startsWith('-')) {
        const want = close === null ? 'a field name' : `a field name or '${close}'`;
        throw new PbtxtError(t.at, `expected ${want}, found ${describe(t)}`);
      }
      this.lex.next();
      this.field(t.text, t.at, out);
      const sep = this.lex.peek();
      if (sep.kind === 'punct' && (sep.text === ',' || sep.text === ';')) this.lex.next();
    }
  }

  private field(name: string, at: Position, out: PbField[]): void {
    let t = this.lex.peek();
    const colon = t.kind === 'punct' && t.text === ':';
    if (colon) {
      this.lex.next();
      t = this.lex.peek();
    }
    if (t.kind === 'punct' && t.text === '[') {
      this.lex.next();
      this.list(name, at, out);
      return;
    }
    if (t.kind === 'punct' && (t.text === '{' || t.text === '<')) {
      out.push({ name, at, value: this.message() });
      return;
    }
    if (!colon) throw new PbtxtError(t.at, `expected ':' or '{' after '${name}', found ${describe(t)}`);
    out.push({ name, at, value: this.scalar() });
  }

  private list(name: string, at: Position, out: PbField[]): void {
    const first = this.lex.peek();
    if (first.kind === 'punct' && first.text === ']') {
      this.lex.next();
      return;
    }
    for (;;) {
      const t = this.lex.peek();
      const value = t.kind === 'punct' && (t.text === '{' || t.text === '<') ? this.message() : this.scalar();
      out.push({ name, at, value });
      const sep = this.lex.next();
      if (sep.kind === 'punct' && sep.text === ']') return;
      if (sep.kind !== 'punct' || sep.text !== ',')
        throw new PbtxtError(sep.at, `expected ',' or ']' in the list of '${name}', found ${describe(sep)}`);
    }
  }

  private message(): PbValue {
    const open = this.lex.next() as Token & { text: string };
    const fields = this.fields(open.text === '{' ? '}' : '>');
    return { kind: 'message', fields, at: open.at };
  }

  private scalar(): PbValue {
    const t = this.lex.next();
    if (t.kind === 'number') return { ...numberValue(t), at: t.at };
    if (t.kind === 'string') {
      let value = t.value;
      for (let n = this.lex.peek(); n.kind === 'string'; n = this.lex.peek())
        value += (this.lex.next() as typeof n).value;
      return { kind: 'string', value, at: t.at };
    }
    if (t.kind === 'ident') {
      const word = FLOAT_WORDS[t.text.toLowerCase()];
      if (word !== undefined) return { kind: 'number', text: t.text, value: word, integer: false, at: t.at };
      if (t.text.startsWith('-')) throw new PbtxtError(t.at, `expected a value, found '${t.text}'`);
      return { kind: 'identifier', value: t.text, at: t.at };
    }
    throw new PbtxtError(t.at, `expected a value (a number, a string or a name), found ${describe(t)}`);
  }
}

/** Parses a text-format message (the whole text, without surrounding braces). Throws PbtxtError. */
export function parsePbtxt(text: string): PbMessage {
  const fields = new Parser(new Lexer(text)).fields(null);
  return { kind: 'message', fields, at: { line: 1, column: 1 } };
}
