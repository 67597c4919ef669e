// An option's default is written once in its table; its doc comment (what users read in their editor)
// ends with the same default. This test holds the two together.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { ADAPTER_OPTIONS } from './adapter/options.js';
import { createLimiter } from './limiter.js';
import { LIMITER_OPTIONS } from './limiter-options.js';
import type { OptionTable } from './options.js';

/** The doc comment of each member of `name`, an interface in `file`. */
function docComments(file: string, name: string): Map<string, string> {
  const source = ts.createSourceFile(file, readFileSync(join(__dirname, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const docs = new Map<string, string>();
  const visit = (node: ts.Node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      for (const member of node.members) {
        const text = ts
          .getJSDocCommentsAndTags(member)
          .map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '')
          .join(' ');
        if (member.name !== undefined && ts.isIdentifier(member.name)) docs.set(member.name.text, text.replace(/\s+/g, ' '));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return docs;
}

/** A default as a doc comment spells it: 'draft', 429, false, { failures: 5, cooldown: 500 }. */
function spelt(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value !== null && typeof value === 'object') {
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${k}: ${spelt(v)}`)
      .join(', ')} }`;
  }
  return String(value);
}

describe.each([
  ['LimiterOptions', 'limiter-options.ts', LIMITER_OPTIONS],
  ['HttpLimitOptions', 'adapter/options.ts', ADAPTER_OPTIONS],
] as [string, string, OptionTable][])('%s: each doc comment names the default its table holds', (name, file, table) => {
  const docs = docComments(file, name);
  const withDefault = Object.entries(table).filter(([, entry]) => entry.default !== undefined);

  it('finds the interface and every option with a default', () => {
    expect(withDefault.length).toBeGreaterThan(0);
    for (const [option] of withDefault) expect({ option, documented: docs.has(option) }).toEqual({ option, documented: true });
  });

  it.each(withDefault)('%s', (option, entry) => {
    expect((docs.get(option) ?? '').toLowerCase()).toContain(`default ${spelt(entry.default)}`.toLowerCase());
  });
});

describe('each rule once, at construction', () => {
  it('shards that cannot split the limiter’s policy are refused once, where every policy set is made', () => {
    expect(() => createLimiter({ policy: '3/1m', shards: 4 })).toThrow(/^policy must be limits of at least 4 \(the limiter's shards/);
  });
});
