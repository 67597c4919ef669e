// The static check that every key a script touches comes from KEYS (test/lua-static.test.ts): Dragonfly
// refuses a key a script did not declare, and a Cluster routes a script call by its KEYS alone.
//
// The model, sound for what a script can do in Redis' Lua (no globals of its own, no load):
// - A key is KEYS[...], or a variable every value of which is a key. KEYS (or a local alias of it) is
//   only ever indexed for reading, measured (#) or aliased.
// - A parameter is a key when every call that may reach its function passes a key there. A function that
//   a local names and that is only ever called is reached by its calls. One that escapes (returned, put in
//   a table: algorithm(code) returns the algorithms' functions) is also reached by every call of a value
//   the check cannot name (step(...), spec[1](...)); one handed to a built-in that calls back (table.sort's
//   comparator) takes anything.
// - redis.call and redis.pcall (also through pcall, and a local alias: `local call = redis.call`) are only
//   ever called, with a literal command of COMMANDS and a key in every key position of that command.
import type * as L from 'luaparse';
import { parse } from 'luaparse';

/** The commands scripts may send, with the positions of their keys after the command ('all': every argument). */
export const COMMANDS: Record<string, number[] | 'all'> = {
  TIME: [],
  ...Object.fromEntries(
    'GET SET INCR INCRBY PEXPIRE PTTL EXPIRE TTL HGET HSET HDEL HGETALL HLEN ZADD ZREM ZCARD ZCOUNT ZRANGE ZREVRANGE ZRANGEBYSCORE ZREMRANGEBYSCORE ZREMRANGEBYRANK ZSCORE'
      .split(' ')
      .map((c) => [c, [1]]),
  ),
  DEL: 'all',
  EXISTS: 'all',
};

/** Built-ins that call a function they are given, with its argument position (pcall is a call of its own). */
// biome-ignore format: a table
const CALLBACKS: Record<string, number[]> = {
  'table.sort': [1], 'table.foreach': [1], 'table.foreachi': [1], 'string.gsub': [2], xpcall: [0, 1], setmetatable: [1],
  'coroutine.create': [0], 'coroutine.wrap': [0],
};

type Fn = L.FunctionDeclaration;
type Value = { expr: L.Expression } | { param: Fn; index: number } | { opaque: true };
type Role = 'called' | 'held' | 'value';
type Binding = { values: Value[] };
type Call = { node: L.Node; callee: L.Expression; args: L.Expression[] };
const OPAQUE: Value = { opaque: true };

/** What in `source` (one script as sent) may touch a key not from KEYS, by the script's line; [] when nothing. */
export function undeclaredKeys(source: string): Array<{ line: number; problem: string }> {
  const chunk = parse(source, { locations: true, ranges: true, luaVersion: '5.1' });
  const text = (n: L.Node) => source.slice(...(n as L.Node & { range: [number, number] }).range);
  const findings: Array<{ line: number; problem: string }> = [];
  const flag = (n: L.Node, problem: string) => findings.push({ line: n.loc!.start.line, problem });

  // Pass 1: every identifier resolved to its local (none: a global), the values each local may hold,
  // every call, every use of a name (called, held by a local, or used as a value), every callback.
  const resolved = new Map<L.Identifier, Binding>();
  const bindings: Binding[] = [];
  const calls: Call[] = [];
  const uses: Array<{ expr: L.Expression; role: Role }> = [];
  const callbacks: L.Expression[] = [];
  const scopes: Array<Map<string, Binding>> = [];
  const lookup = (name: string) => {
    for (let i = scopes.length - 1; i >= 0; i--) if (scopes[i]!.has(name)) return scopes[i]!.get(name);
    return undefined;
  };
  const declare = (id: L.Identifier, value: Value) => {
    const b: Binding = { values: [value] };
    scopes.at(-1)!.set(id.name, b);
    resolved.set(id, b);
    bindings.push(b);
  };
  const block = (body: L.Statement[], first: () => void = () => {}, last: () => void = () => {}) => {
    scopes.push(new Map());
    first();
    for (const s of body) statement(s);
    last();
    scopes.pop();
  };
  const valueAt = (init: L.Expression[], i: number): Value => (init[i] ? { expr: init[i] } : OPAQUE);

  function statement(s: L.Statement): void {
    switch (s.type) {
      case 'LocalStatement':
        for (const [i, e] of s.init.entries()) expression(e, i < s.variables.length ? 'held' : 'value');
        for (const [i, v] of s.variables.entries()) declare(v, valueAt(s.init, i));
        break;
      case 'AssignmentStatement':
        for (const [i, e] of s.init.entries()) expression(e, s.variables[i]?.type === 'Identifier' ? 'held' : 'value');
        for (const [i, v] of s.variables.entries()) assign(v, valueAt(s.init, i));
        break;
      case 'FunctionDeclaration':
        if (s.identifier?.type === 'Identifier' && s.isLocal) declare(s.identifier, { expr: s });
        else if (s.identifier) assign(s.identifier, { expr: s });
        expression(s, 'held');
        break;
      case 'CallStatement':
        expression(s.expression, 'value');
        break;
      case 'ReturnStatement':
        for (const e of s.arguments) expression(e, 'value');
        break;
      case 'IfStatement':
        for (const c of s.clauses) {
          if (c.type !== 'ElseClause') expression(c.condition, 'value');
          block(c.body);
        }
        break;
      case 'WhileStatement':
        expression(s.condition, 'value');
        block(s.body);
        break;
      case 'RepeatStatement':
        block(s.body, undefined, () => expression(s.condition, 'value'));
        break;
      case 'DoStatement':
        block(s.body);
        break;
      case 'ForNumericStatement':
        for (const e of [s.start, s.end, s.step]) if (e) expression(e, 'value');
        block(s.body, () => declare(s.variable, OPAQUE));
        break;
      case 'ForGenericStatement':
        for (const e of s.iterators) expression(e, 'value');
        block(s.body, () => {
          for (const v of s.variables) declare(v, OPAQUE);
        });
        break;
    }
  }

  // An assignment to a local adds to its values; one to a global or into one (KEYS[1] = ...) fails the check.
  function assign(target: L.Identifier | L.MemberExpression | L.IndexExpression, value: Value): void {
    const b = target.type === 'Identifier' ? lookup(target.name) : undefined;
    if (b) {
      resolved.set(target as L.Identifier, b);
      b.values.push(value);
    } else if (target.type === 'Identifier') flag(target, `assigns ${text(target)}, a global`);
    else {
      expression(target, 'value');
      if (builtinName(target.base) !== undefined) flag(target, `assigns ${text(target)}, a global`);
    }
  }

  function expression(e: L.Expression, role: Role): void {
    if (e.type === 'Identifier' || e.type === 'MemberExpression') uses.push({ expr: e, role });
    switch (e.type) {
      case 'Identifier':
        if (lookup(e.name)) resolved.set(e, lookup(e.name)!);
        break;
      case 'FunctionDeclaration':
        block(e.body, () => {
          e.parameters.forEach((p, index) => {
            if (p.type === 'Identifier') declare(p, { param: e, index });
          });
        });
        break;
      case 'MemberExpression':
        expression(e.base, 'called');
        break;
      case 'IndexExpression':
        // Reading KEYS[...] is not a use of KEYS as a value.
        expression(e.base, 'called');
        expression(e.index, 'value');
        break;
      case 'CallExpression':
      case 'StringCallExpression':
      case 'TableCallExpression': {
        const args = e.type === 'StringCallExpression' ? [e.argument] : e.type === 'TableCallExpression' ? [e.arguments] : e.arguments;
        expression(e.base, 'called');
        const name = builtinName(e.base);
        // pcall(f, ...) calls f(...): redis.call through pcall is checked as a call of its own.
        for (const [i, a] of args.entries()) expression(a, i === 0 && name === 'pcall' ? 'called' : 'value');
        const self = e.base.type === 'MemberExpression' && e.base.indexer === ':' ? [e.base.base] : [];
        calls.push({ node: e, callee: e.base, args: [...self, ...args] });
        if (name === 'pcall' && args[0]) calls.push({ node: e, callee: args[0], args: args.slice(1) });
        for (const i of CALLBACKS[name ?? ''] ?? []) if (args[i]) callbacks.push(args[i]);
        break;
      }
      case 'BinaryExpression':
      case 'LogicalExpression':
        expression(e.left, 'value');
        expression(e.right, 'value');
        break;
      case 'UnaryExpression':
        // Nor is measuring it (#KEYS).
        expression(e.argument, e.operator === '#' ? 'called' : 'value');
        break;
      case 'TableConstructorExpression':
        for (const f of e.fields) {
          if (f.type === 'TableKey') expression(f.key, 'value');
          expression(f.value, 'value');
        }
        break;
    }
  }

  // The dotted name of the built-in `e` holds (string.format, redis.call, KEYS), or undefined.
  function builtinName(e: L.Expression): string | undefined {
    if (e.type === 'Identifier') {
      const b = resolved.get(e);
      if (!b) return e.name;
      const only = b.values.length === 1 ? b.values[0] : undefined;
      return only && 'expr' in only ? builtinName(only.expr) : undefined;
    }
    if (e.type !== 'MemberExpression' || e.indexer !== '.') return undefined;
    const base = builtinName(e.base);
    return base && (base === '_G' ? e.identifier.name : `${base}.${e.identifier.name}`);
  }

  block(chunk.body);

  // KEYS, redis and redis.call are only called (indexed, measured) or held by a local that holds nothing else.
  const special = (e: L.Expression) => ['KEYS', 'redis', 'redis.call', 'redis.pcall', '_G'].includes(builtinName(e) ?? '');
  for (const { expr, role } of uses) if (role === 'value' && special(expr)) flag(expr, `uses ${text(expr)} as a value`);
  for (const b of bindings) {
    const held = b.values.length > 1 && b.values.find((v): v is { expr: L.Expression } => 'expr' in v && special(v.expr));
    if (held) flag(held.expr, `a local holds ${text(held.expr)} and other values`);
  }

  // Pass 2: the functions each call may reach, then keys as the greatest fixpoint (all start as keys).
  const named = new Map<Fn, Binding>();
  for (const b of bindings) {
    const only = b.values.length === 1 ? b.values[0] : undefined;
    if (only && 'expr' in only && only.expr.type === 'FunctionDeclaration') named.set(only.expr, b);
  }
  const namers = new Set(named.values());
  const namedFn = (e: L.Expression) => e.type === 'Identifier' && namers.has(resolved.get(e)!);
  const refersTo = (e: L.Expression, f: Fn) => e === f || (e.type === 'Identifier' && named.has(f) && resolved.get(e) === named.get(f));
  const escaped = (f: Fn) => !named.has(f) || uses.some((u) => u.role !== 'called' && refersTo(u.expr, f));
  const unnamed = callbacks.some((c) => c.type !== 'FunctionDeclaration' && !namedFn(c));
  const calledBack = (f: Fn) => (escaped(f) && unnamed) || callbacks.some((c) => refersTo(c, f));
  const unknown = calls.filter((c) => !namedFn(c.callee) && builtinName(c.callee) === undefined);
  const reaching = (f: Fn) => [
    ...calls.filter((c) => c.callee.type === 'Identifier' && refersTo(c.callee, f)),
    ...(escaped(f) ? unknown : []),
  ];

  const keys = new Set(bindings);
  const isKey = (e: L.Expression | undefined): boolean =>
    e?.type === 'IndexExpression' ? builtinName(e.base) === 'KEYS' : e?.type === 'Identifier' && keys.has(resolved.get(e)!);
  const holdsKey = (v: Value) =>
    'expr' in v ? isKey(v.expr) : 'param' in v && !calledBack(v.param) && reaching(v.param).every((c) => isKey(c.args[v.index]));
  for (let changed = true; changed; ) {
    changed = false;
    for (const b of keys) if (!b.values.every(holdsKey)) changed = keys.delete(b);
  }

  for (const { node, callee, args } of calls) {
    if (!['redis.call', 'redis.pcall'].includes(builtinName(callee) ?? '')) continue;
    const [command, ...rest] = args;
    const name = command?.type === 'StringLiteral' ? command.raw.slice(1, -1).toUpperCase() : undefined;
    const positions = name === undefined ? undefined : COMMANDS[name];
    if (positions === undefined) {
      flag(node, `${text(node)}: ${name ? `${name} is not in COMMANDS` : 'the command is not a literal'}`);
      continue;
    }
    for (const p of positions === 'all' ? rest.map((_, i) => i + 1) : positions) {
      if (!isKey(rest[p - 1])) flag(node, `${text(node)}: ${rest[p - 1] ? text(rest[p - 1]!) : 'no key'} is not from KEYS`);
    }
  }
  return findings;
}
