import { rateLimitHeaders } from '../headers.js';
import { createLimiter } from '../limiter.js';
import { periodAt, periodStarts } from '../policy/calendar-periods.js';
import { parsePolicy } from '../policy/policy.js';
import { memoryStore } from '../store/memory-store.js';

const H = 3_600_000;
const iso = (t: number) => new Date(t).toISOString();
/** Lengths in hours of the periods p-1, p, p+1 around `t`, and the current period's start. */
function around(period: 'day' | 'week' | 'month', zone: string, t: number) {
  const { starts } = periodStarts(period, zone, t);
  return { start: iso(starts[1] as number), hours: starts.slice(1).map((s, i) => (s - (starts[i] as number)) / H) };
}

describe('calendar periods', () => {
  it.each<[string, 'day' | 'week' | 'month', string, string, string, number[]]>([
    // zone, period, an instant, its period's start, lengths of the previous, this and the next period in hours
    ['America/New_York DST starts (23 h)', 'day', 'America/New_York', '2024-03-10T12:00:00Z', '2024-03-10T05:00:00.000Z', [24, 23, 24]],
    ['America/New_York DST ends (25 h)', 'day', 'America/New_York', '2024-11-03T12:00:00Z', '2024-11-03T04:00:00.000Z', [24, 25, 24]],
    ['Europe/Berlin DST starts (23 h)', 'day', 'Europe/Berlin', '2024-03-31T05:00:00Z', '2024-03-30T23:00:00.000Z', [24, 23, 24]],
    ['Europe/Berlin DST ends (25 h)', 'day', 'Europe/Berlin', '2024-10-27T12:00:00Z', '2024-10-26T22:00:00.000Z', [24, 25, 24]],
    ['February 29 in UTC', 'day', 'UTC', '2024-02-29T23:59:59.999Z', '2024-02-29T00:00:00.000Z', [24, 24, 24]],
    ['a leap February (29 days) in UTC', 'month', 'UTC', '2024-02-29T12:00:00Z', '2024-02-01T00:00:00.000Z', [31 * 24, 29 * 24, 31 * 24]],
    [
      'a month end: January 31 in Tokyo is still January',
      'month',
      'Asia/Tokyo',
      '2024-01-31T14:59:59.999Z',
      '2023-12-31T15:00:00.000Z',
      [31 * 24, 31 * 24, 29 * 24],
    ],
    [
      'the next ms in Tokyo is February',
      'month',
      'Asia/Tokyo',
      '2024-01-31T15:00:00.000Z',
      '2024-01-31T15:00:00.000Z',
      [31 * 24, 29 * 24, 31 * 24],
    ],
    [
      'an ISO week in Tokyo starts on Monday local',
      'week',
      'Asia/Tokyo',
      '2024-01-01T00:00:00Z',
      '2023-12-31T15:00:00.000Z',
      [168, 168, 168],
    ],
    ['an ISO week in UTC (Sunday is its last day)', 'week', 'UTC', '2024-03-10T23:00:00Z', '2024-03-04T00:00:00.000Z', [168, 168, 168]],
    [
      'a week with a DST change in Berlin (167 h)',
      'week',
      'Europe/Berlin',
      '2024-03-31T12:00:00Z',
      '2024-03-24T23:00:00.000Z',
      [168, 167, 168],
    ],
    [
      'a month with a DST change in New York',
      'month',
      'America/New_York',
      '2024-11-15T00:00:00Z',
      '2024-11-01T04:00:00.000Z',
      [31 * 24, 30 * 24 + 1, 31 * 24],
    ],
  ])('%s', (_name, period, zone, at, start, hours) => {
    expect(around(period, zone, Date.parse(at))).toEqual({ start, hours });
  });

  it('a day whose midnight DST skips starts at 01:00 local (America/Santiago, 2024-09-08)', () => {
    expect(around('day', 'America/Santiago', Date.parse('2024-09-08T12:00:00Z'))).toEqual({
      start: '2024-09-08T04:00:00.000Z',
      hours: [24, 23, 24],
    });
  });

  it('periodAt: the candidate that holds now, and beyond them periods at the nearest length', () => {
    const starts = [0, 10, 30, 40];
    expect(periodAt(starts, 0)).toEqual([0, 10]);
    expect(periodAt(starts, 9.999)).toEqual([0, 10]);
    expect(periodAt(starts, 10)).toEqual([10, 30]);
    expect(periodAt(starts, 39)).toEqual([30, 40]);
    expect(periodAt(starts, 40)).toEqual([40, 50]);
    expect(periodAt(starts, 55)).toEqual([50, 60]);
    expect(periodAt(starts, -1)).toEqual([-10, 0]);
    expect(periodAt(starts, -10)).toEqual([-10, 0]);
    expect(periodAt(starts, -10.5)).toEqual([-20, -10]);
  });
});

describe('calendar quotas on the memory store (a controlled clock)', () => {
  let now = 0;
  const store = () => memoryStore({ clock: () => now });

  it("'2/day' in America/New_York: the count holds until local midnight, then a fresh day; resetMs and w follow the 23-hour day", async () => {
    const limiter = createLimiter({ policy: { limit: 2, window: 'day', timeZone: 'America/New_York' }, store: store() });
    const midnight = Date.parse('2024-03-11T04:00:00Z'); // the end of 2024-03-10, a 23-hour day
    now = Date.parse('2024-03-10T05:00:00Z'); // its first ms
    const first = await limiter.consume('k');
    expect(first).toMatchObject({ allowed: true, remaining: 1, resetMs: 23 * H, policy: '2-per-day@America/New_York' });
    expect(rateLimitHeaders(first)['RateLimit-Policy']).toBe(`"2-per-day@America/New_York";q=2;w=${23 * 3600}`);
    now = midnight - 1;
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0, resetMs: 1 });
    const denied = await limiter.consume('k');
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 1 });
    now = midnight;
    const next = await limiter.consume('k');
    expect(next).toMatchObject({ allowed: true, remaining: 1, resetMs: 24 * H });
  });

  it("Europe/Berlin's 25-hour day and Asia/Tokyo's month end count in local periods", async () => {
    const berlin = createLimiter({ policy: { limit: 1, window: 'day', timeZone: 'Europe/Berlin' }, store: store() });
    now = Date.parse('2024-10-26T22:00:00Z'); // 2024-10-27 00:00 CEST
    expect(await berlin.consume('k')).toMatchObject({ allowed: true, resetMs: 25 * H });
    now = Date.parse('2024-10-27T22:59:59.999Z'); // 23:59:59.999 CET, the same local day
    expect(await berlin.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 1 });
    now += 1;
    expect((await berlin.consume('k')).allowed).toBe(true);

    const tokyo = createLimiter({ policy: { limit: 1, window: 'month', timeZone: 'Asia/Tokyo' }, store: store() });
    now = Date.parse('2024-01-31T14:59:59Z'); // 23:59:59 on January 31 in Tokyo
    expect(await tokyo.consume('k')).toMatchObject({ allowed: true, resetMs: 1000 });
    now = Date.parse('2024-01-31T15:00:00Z'); // February 1 in Tokyo, still January 31 in UTC
    const february = await tokyo.consume('k');
    expect(february).toMatchObject({ allowed: true, resetMs: 29 * 24 * H });
    expect(february.policies[0]!.windowMs).toBe(29 * 24 * H);
  });

  it("'1/month' and '3/week' in UTC: February 29 is in February, and a week runs Monday to Sunday", async () => {
    const limiter = createLimiter({ policy: ['1/month', '3/week'], store: store() });
    now = Date.parse('2024-02-29T23:59:59.999Z');
    expect(await limiter.consume('k')).toMatchObject({ allowed: true });
    const denied = await limiter.consume('k');
    expect(denied).toMatchObject({ allowed: false, policy: '1-per-month', retryAfterMs: 1 });
    // A denial by the month charged the week nothing.
    expect(denied.policies[1]).toMatchObject({ name: '3-per-week', remaining: 2 });
    now += 1; // March 1, a Friday: the same ISO week
    const march = await limiter.consume('k');
    expect(march.policies.map((p) => p.remaining)).toEqual([0, 1]);
    expect(march.policies[1]!.resetMs).toBe(Date.parse('2024-03-04T00:00:00Z') - now);
  });

  it('a plan change carries the period usage on under the new limit, both ways', async () => {
    const limiter = createLimiter({ store: store() });
    now = Date.parse('2024-05-01T10:00:00Z');
    const free = { limit: 3, window: 'day' } as const;
    const pro = { limit: 5, window: 'day', name: 'pro-daily' } as const;
    for (let i = 0; i < 3; i++) expect((await limiter.consume('u', { policy: free })).allowed).toBe(true);
    expect((await limiter.consume('u', { policy: free })).allowed).toBe(false);
    // Upgraded: 3 used of 5.
    expect(await limiter.consume('u', { policy: pro })).toMatchObject({ allowed: true, remaining: 1, policy: 'pro-daily' });
    // Downgraded again: 4 used of 3, denied until the day ends; flipping plans gained nothing.
    expect((await limiter.consume('u', { policy: free })).allowed).toBe(false);
    expect((await limiter.consume('u', { policy: pro })).allowed).toBe(true);
    expect((await limiter.consume('u', { policy: pro })).allowed).toBe(false);
  });

  it('keys expire with their period', async () => {
    const s = store();
    const limiter = createLimiter({ policy: '5/day', store: s });
    now = Date.parse('2024-05-01T23:00:00Z');
    await limiter.consume('a');
    now = Date.parse('2024-05-02T00:00:00Z');
    expect(await limiter.peek('a')).toMatchObject({ remaining: 5 });
  });
});

describe('calendar policies: parsing', () => {
  it('strings and objects', () => {
    expect(parsePolicy('1000/day')).toMatchObject({
      name: '1000-per-day',
      limit: 1000,
      algorithm: 'calendar',
      period: 'day',
      timeZone: 'UTC',
    });
    expect(parsePolicy('5/week')).toMatchObject({ name: '5-per-week', period: 'week' });
    expect(parsePolicy('50000/month')).toMatchObject({ period: 'month', windowMs: 30 * 24 * H });
    expect(parsePolicy({ limit: 1, window: 'day', timeZone: 'europe/berlin' })).toMatchObject({
      timeZone: 'Europe/Berlin',
      name: '1-per-day@Europe/Berlin',
    });
    // '1000/d' is a token bucket refilled over 24 hours, not a calendar day.
    expect(parsePolicy('1000/d')).toMatchObject({ algorithm: 'token-bucket', windowMs: 24 * H });
    // The id names the period and the zone, not the limit: plans share the period's usage.
    expect(parsePolicy('1/day').id).toBe(parsePolicy({ limit: 9, window: 'day', timeZone: 'UTC' }).id);
    expect(parsePolicy('1/day').id).not.toBe(parsePolicy({ limit: 1, window: 'day', timeZone: 'Asia/Tokyo' }).id);
  });

  it.each([
    [{ limit: 1, window: 'day', timeZone: 'Mars/Olympus' }, 'policy.timeZone must be an IANA time zone'],
    [{ limit: 1, window: 'day', timeZone: 42 }, 'policy.timeZone must be an IANA time zone'],
    [{ limit: 1, window: '1h', timeZone: 'UTC' }, "policy.timeZone must be used only with a calendar window ('day', 'week' or 'month')"],
    [{ limit: 1, window: 'day', algorithm: 'token-bucket' }, "policy.algorithm must be absent with window 'day'"],
    [{ limit: 1, window: 'month', burst: 2 }, "policy.burst must be absent with window 'month'"],
    [{ limit: 1, window: '1h', algorithm: 'calendar' }, 'policy.algorithm must be absent for a calendar quota'],
    [{ limit: 0, window: 'day' }, 'policy.limit must be a positive integer, got 0'],
  ])('rejects %j', (input, message) => {
    expect(() => parsePolicy(input)).toThrow(message);
  });

  it('two quotas of one period and zone in one set are refused', () => {
    expect(() => createLimiter({ policy: ['1/day', { limit: 2, window: 'day' }] })).toThrow('one calendar quota per period and zone');
  });
});
