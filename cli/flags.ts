// Flag parsers the commands share; commander reports a parser's message with the flag it was given to.
import { InvalidArgumentError } from 'commander';

export function nonNegativeInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be an integer >= 0');
  return n;
}

export function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be an integer >= 1');
  return n;
}
