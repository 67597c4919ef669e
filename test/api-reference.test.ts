// docs/api.md is the one reference: it names every export of every package entry point, and every property
// of the options, answers and interfaces they take and give, and every value of their string unions. The
// TypeScript compiler reads the packages' sources (tsconfig.json's paths: no build needed) and lists them;
// a name the page does not carry in backticks, in the section that documents its type, fails here. An
// option added to a type without a line in the reference fails this test.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

const ROOT = join(__dirname, '..');
const API = 'docs/api.md';

/** Each entry point, and the section of docs/api.md that lists its exports. */
const ENTRIES: Record<string, string> = {
  'packages/core/src/index.ts': '@sluice/core',
  'packages/core/src/adapter.ts': 'For adapter authors: @sluice/core/adapter',
  'packages/core/src/testing.ts': 'Testing: @sluice/core/testing',
  'packages/express/src/index.ts': '@sluice/express',
  'packages/fastify/src/index.ts': '@sluice/fastify',
  'packages/koa/src/index.ts': '@sluice/koa',
  'packages/hono/src/index.ts': '@sluice/hono',
  'packages/graphql/src/index.ts': '@sluice/graphql',
  'packages/nestjs/src/index.ts': '@sluice/nestjs',
  'packages/metrics/src/index.ts': '@sluice/metrics',
};

/** A type, by the file that exports it and its name there. */
interface TypeRef {
  file: string;
  type: string;
}

interface Check extends TypeRef {
  /** Where its names are documented: the section of docs/api.md under this heading, or a whole page ('docs/...md'). */
  in: string;
  /** Types whose names are documented elsewhere, so not looked for here (an adapter's options include the limiter's). */
  except?: TypeRef[];
}

const CORE = 'packages/core/src';
const GRAPHQL = 'packages/graphql/src';
const FASTIFY = 'packages/fastify/src/index.ts';
const LIMITER_OPTIONS = { file: `${CORE}/limiter-options.ts`, type: 'LimiterOptions' };
const HTTP_OPTIONS = { file: `${CORE}/adapter/options.ts`, type: 'HttpLimitOptions' };
const FASTIFY_SPELLINGS = { file: 'packages/fastify/src/peer.ts', type: 'FastifyRateLimitSpellings' };
const SHEDDER_OPTIONS = { file: `${CORE}/shed/shedder.ts`, type: 'ShedderOptions' };
const CHECKS: Check[] = [
  { ...LIMITER_OPTIONS, in: 'createLimiter options' },
  { file: `${CORE}/rules/ban.ts`, type: 'BanOptions', in: 'createLimiter options' },
  { file: `${CORE}/limiter-api.ts`, type: 'Limiter', in: 'createLimiter' },
  { file: `${CORE}/limiter-api.ts`, type: 'ConsumeOptions', in: 'createLimiter' },
  { file: `${CORE}/limiter-api.ts`, type: 'CallOptions', in: 'createLimiter' },
  { file: `${CORE}/limiter-api.ts`, type: 'WaitOptions', in: 'createLimiter' },
  { file: `${CORE}/decision.ts`, type: 'Decision', in: 'Decision' },
  { file: `${CORE}/decision.ts`, type: 'PolicyDecision', in: 'Decision' },
  { file: `${CORE}/decision.ts`, type: 'DecisionSource', in: 'Decision' },
  { file: `${CORE}/events.ts`, type: 'LimiterEvent', in: 'Events' },
  { file: `${CORE}/policy/policy.ts`, type: 'PolicyInput', in: 'Policies' },
  { file: `${CORE}/policy/policy.ts`, type: 'WindowStart', in: 'Policies' },
  { file: `${CORE}/policy/policy.ts`, type: 'CalendarPeriod', in: 'Policies' },
  { file: `${CORE}/policy/policy.ts`, type: 'Algorithm', in: 'Algorithms' },
  { ...HTTP_OPTIONS, in: 'Middleware options', except: [LIMITER_OPTIONS] },
  { file: `${CORE}/adapter/delay.ts`, type: 'DelayOptions', in: 'Middleware options' },
  { file: `${CORE}/headers.ts`, type: 'HeadersMode', in: 'Middleware options' },
  { file: 'packages/express/src/index.ts', type: 'ExpressOwnOptions', in: 'Middleware options' },
  { file: 'packages/koa/src/index.ts', type: 'KoaOwnOptions', in: 'Middleware options' },
  { file: FASTIFY, type: 'FastifyPluginOwnOptions', in: 'Middleware options' },
  { file: 'packages/hono/src/rate-limit.ts', type: 'HonoOwnOptions', in: 'Middleware options' },
  { file: 'packages/hono/src/peer.ts', type: 'HonoRateLimiterSpellings', in: 'docs/hono.md' },
  { file: 'packages/nestjs/src/options.ts', type: 'SluiceModuleOptions', in: '@sluice/nestjs', except: [LIMITER_OPTIONS, HTTP_OPTIONS] },
  { file: 'packages/nestjs/src/module.ts', type: 'SluiceModuleAsyncOptions', in: '@sluice/nestjs' },
  { file: 'packages/nestjs/src/exception.ts', type: 'RateLimitedException', in: '@sluice/nestjs' },
  { file: 'packages/nestjs/src/throttler-storage.ts', type: 'ThrottlerStorageRecord', in: '@sluice/nestjs' },
  {
    file: FASTIFY,
    type: 'FastifyRateLimitRouteOptions',
    in: 'Middleware options',
    except: [LIMITER_OPTIONS, HTTP_OPTIONS, FASTIFY_SPELLINGS],
  },
  { file: FASTIFY, type: 'RateLimitError', in: 'Middleware options' },
  { file: `${CORE}/adapter/problem.ts`, type: 'LimitedResponse', in: 'Middleware options' },
  { file: 'packages/express/src/peer.ts', type: 'ExpressRateLimitSpellings', in: 'docs/migrating/express-rate-limit.md' },
  { ...FASTIFY_SPELLINGS, in: 'docs/migrating/fastify-rate-limit.md' },
  { ...SHEDDER_OPTIONS, in: 'Shedding' },
  { file: `${CORE}/adapter/shed.ts`, type: 'ShedOptions', in: 'Shedding', except: [SHEDDER_OPTIONS] },
  { file: `${CORE}/shed/shedder.ts`, type: 'Shedder', in: 'Shedding' },
  { file: `${CORE}/shed/shedder.ts`, type: 'Permit', in: 'Shedding' },
  { file: `${CORE}/shed/shedder.ts`, type: 'ShedderEvent', in: 'Shedding' },
  { file: `${CORE}/shed/shedder.ts`, type: 'Priority', in: 'Shedding' },
  { file: `${CORE}/rules/rules.ts`, type: 'RulesOptions', in: 'Rules' },
  { file: `${CORE}/rules/rules.ts`, type: 'Rules', in: 'Rules' },
  { file: `${CORE}/rules/rules.ts`, type: 'RuleOptions', in: 'Rules' },
  { file: `${CORE}/rules/match.ts`, type: 'Rule', in: 'Rules' },
  { file: `${CORE}/rules/match.ts`, type: 'RuleKind', in: 'Rules' },
  { file: `${CORE}/throttle.ts`, type: 'ThrottleOptions', in: 'Waiting' },
  { file: `${CORE}/rate-limited-fetch.ts`, type: 'RateLimitedFetchOptions', in: 'Waiting' },
  { file: `${CORE}/wait.ts`, type: 'WaitError', in: 'Waiting' },
  { file: `${CORE}/store/memory-store.ts`, type: 'MemoryStoreOptions', in: 'Stores' },
  { file: `${CORE}/store/redis/store.ts`, type: 'RedisStoreOptions', in: 'Stores' },
  { file: `${CORE}/store/contract.ts`, type: 'Store', in: 'The Store interface' },
  { file: `${CORE}/testing/test-clock.ts`, type: 'TestClock', in: 'Testing: @sluice/core/testing' },
  { file: `${CORE}/testing/reset-all.ts`, type: 'ResetAllOptions', in: 'Testing: @sluice/core/testing' },
  { file: `${CORE}/store/conformance.ts`, type: 'StoreVectorsOptions', in: 'The Store interface' },
  { file: `${CORE}/store/contract.ts`, type: 'StoreRequest', in: 'The Store interface' },
  { file: `${CORE}/store/contract.ts`, type: 'StoreReply', in: 'The Store interface' },
  { file: `${CORE}/store/contract.ts`, type: 'PolicyState', in: 'The Store interface' },
  { file: `${CORE}/policy/policy.ts`, type: 'Policy', in: 'The Store interface' },
  { file: `${CORE}/store/contract.ts`, type: 'RuleStore', in: 'The Store interface' },
  { file: `${CORE}/store/contract.ts`, type: 'RuleChanges', in: 'The Store interface' },
  { file: `${CORE}/regions/options.ts`, type: 'RegionsOptions', in: 'Regions' },
  { file: `${CORE}/store/leases.ts`, type: 'LeaseStore', in: 'Regions' },
  { file: `${CORE}/store/leases.ts`, type: 'LeaseSpend', in: 'Regions' },
  { file: `${CORE}/store/leases.ts`, type: 'LeaseAsk', in: 'Regions' },
  { file: `${CORE}/store/leases.ts`, type: 'HomeGrant', in: 'Regions' },
  { file: `${CORE}/store/leases.ts`, type: 'HomeView', in: 'Regions' },
  { file: `${CORE}/store/leases.ts`, type: 'LeaseBucket', in: 'Regions' },
  { file: `${CORE}/store/leases.ts`, type: 'LeaseTimes', in: 'Regions' },
  { file: `${GRAPHQL}/options.ts`, type: 'CostLimitOptions', in: 'GraphQL' },
  { file: `${GRAPHQL}/options.ts`, type: 'CostWeights', in: 'GraphQL' },
  { file: `${GRAPHQL}/cost-limit.ts`, type: 'CostLimit', in: 'GraphQL' },
  { file: `${GRAPHQL}/extensions.ts`, type: 'QueryCost', in: 'GraphQL' },
  { file: `${GRAPHQL}/extensions.ts`, type: 'ThrottleStatus', in: 'GraphQL' },
  { file: `${GRAPHQL}/envelop.ts`, type: 'EnvelopPlugin', in: 'GraphQL' },
  { file: `${GRAPHQL}/envelop.ts`, type: 'EnvelopArgs', in: 'GraphQL' },
  { file: `${GRAPHQL}/apollo.ts`, type: 'ApolloPlugin', in: 'GraphQL' },
  { file: `${GRAPHQL}/apollo.ts`, type: 'ApolloListener', in: 'GraphQL' },
  { file: `${GRAPHQL}/apollo.ts`, type: 'ApolloOperationContext', in: 'GraphQL' },
  { file: `${GRAPHQL}/apollo.ts`, type: 'ApolloResponseContext', in: 'GraphQL' },
  { file: 'packages/metrics/src/prometheus.ts', type: 'PrometheusMetricsOptions', in: 'Metrics' },
  { file: 'packages/metrics/src/prometheus.ts', type: 'SluiceMetrics', in: 'Metrics' },
  { file: 'packages/metrics/src/opentelemetry.ts', type: 'OpenTelemetryMetricsOptions', in: 'Metrics' },
];

/** One program over the entry points, with tsconfig.json's options (its paths map @sluice/* to the sources). */
function program(): ts.Program {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const files = [...Object.keys(ENTRIES), ...CHECKS.map((c) => c.file)].map((f) => join(ROOT, f));
  return ts.createProgram({ rootNames: [...new Set(files)], options: { ...parsed.options, noEmit: true } });
}

/** The text under a heading of the page, to the next heading of its level or above. */
function section(text: string, heading: string): string {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => /^#{1,6} /.test(l) && l.replace(/^#+ /, '').trim() === heading);
  if (start === -1) throw new Error(`${API} has no heading "${heading}"`);
  const level = (/^#+/.exec(lines[start] as string) as RegExpExecArray)[0].length;
  const end = lines.findIndex((l, i) => i > start && /^#{1,6} /.test(l) && (/^#+/.exec(l) as RegExpExecArray)[0].length <= level);
  return lines.slice(start, end === -1 ? undefined : end).join('\n');
}

/** `name` in backticks, alone or as the start of a code span (`name: ...`, `name(...)`), or a string value 'name'. */
function mentions(text: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`\`${escaped}(?![\\w-])|'${escaped}'`).test(text);
}

describe('the API reference (docs/api.md) against the types', () => {
  const prog = program();
  const checker = prog.getTypeChecker();
  const api = readFileSync(join(ROOT, API), 'utf8');

  function exportsOf(file: string): Map<string, ts.Symbol> {
    const source = prog.getSourceFile(join(ROOT, file));
    if (source === undefined) throw new Error(`${file} is not in the program`);
    const module = checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`${file} is not a module`);
    return new Map(checker.getExportsOfModule(module).map((s) => [s.name, s]));
  }

  /** The names a type documents: its properties (own members for a class), or its string values for a union of strings. */
  function namesOf(file: string, name: string): string[] {
    let symbol = exportsOf(file).get(name);
    if (symbol === undefined) throw new Error(`${file} exports no ${name}`);
    if (symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    if (symbol.flags & ts.SymbolFlags.Class) {
      return [...(symbol.members?.keys() ?? [])].map(String).filter((n) => n !== '__constructor');
    }
    const type = checker.getDeclaredTypeOfSymbol(symbol);
    const parts = type.isUnion() ? type.types : [type];
    const values = parts.filter((t) => t.isStringLiteral()).map((t) => (t as ts.StringLiteralType).value);
    const objects = parts.filter(
      (t) => !t.isLiteral() && !(t.flags & ts.TypeFlags.BooleanLiteral) && !(t.flags & ts.TypeFlags.TemplateLiteral),
    );
    const properties = objects.flatMap((t) => checker.getPropertiesOfType(t).map((p) => p.name));
    // An event's `type` documents its values too (LimiterEvent's union of strings, each ShedderEvent's string).
    const nested = objects.flatMap((t) =>
      checker.getPropertiesOfType(t).flatMap((p) => {
        if (p.name !== 'type') return [];
        const pt = checker.getTypeOfSymbol(p);
        return (pt.isUnion() ? pt.types : [pt]).filter((u) => u.isStringLiteral()).map((u) => (u as ts.StringLiteralType).value);
      }),
    );
    return [...new Set([...values, ...properties, ...nested])];
  }

  it.each(Object.entries(ENTRIES))('lists every export of %s under "%s"', (file, heading) => {
    const text = section(api, heading);
    const names = [...exportsOf(file).keys()];
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !mentions(text, n))).toEqual([]);
  });

  it.each(CHECKS.map((c) => [c.type, c.in, c] as const))('documents every name of %s in "%s"', (_type, _in, check) => {
    const text = check.in.endsWith('.md') ? readFileSync(join(ROOT, check.in), 'utf8') : section(api, check.in);
    const elsewhere = new Set((check.except ?? []).flatMap((t) => namesOf(t.file, t.type)));
    const names = namesOf(check.file, check.type).filter((n) => !elsewhere.has(n));
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !mentions(text, n))).toEqual([]);
  });

  it('names every error code the packages throw under "Errors"', () => {
    const codes = new Set<string>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.c?ts$/.test(entry.name) && !entry.name.endsWith('.test.ts')) {
          for (const m of readFileSync(path, 'utf8').matchAll(/'(ERR_SLUICE_[A-Z_]+)'/g)) codes.add(m[1] as string);
        }
      }
    };
    for (const pkg of readdirSync(join(ROOT, 'packages'))) walk(join(ROOT, 'packages', pkg, 'src'));
    expect(codes.size).toBeGreaterThan(0);
    const text = section(api, 'Errors');
    expect([...codes].filter((c) => !mentions(text, c))).toEqual([]);
  });

  it('finds a property missing from the page (the check can fail)', () => {
    expect(mentions('| `failMode` | ... |', 'failMode')).toBe(true);
    expect(mentions('| `failModes` | ... |', 'failMode')).toBe(false);
    expect(mentions("source `'rule'`", 'rule')).toBe(true);
    expect(mentions('`ban: { after, within, for }`', 'ban')).toBe(true);
  });
});
