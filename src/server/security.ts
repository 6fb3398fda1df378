// Request gatekeeping (docs/threat-model.md), as middleware factories:
// - hostCheck (global): the Host header must name this server (DNS rebinding defence);
// - crossSiteGuard (on each state-changing route, declared in registry.ts): a request coming
//   from a browser must carry this server's own Origin; a browser's cross-site marker without
//   an Origin is refused too. Clients that are not browsers send neither header and pass;
// - tokenGuard (on each route that is not declared public): when a token is configured,
//   `Authorization: Bearer <token>` (constant-time comparison). GET requests may carry
//   `?access_token=` instead, because EventSource and links opened in a new tab cannot set headers.
// The route guards sit on the route declarations, never behind a comparison of request paths:
// whatever path text the router accepts for a route, the route's guards run.

import { createHash, timingSafeEqual } from 'node:crypto';
import { hostname, networkInterfaces } from 'node:os';
import type { Context, Next } from 'koa';
import { ApiError } from './errors.js';

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

export interface Endpoint {
  /** Bound address as given (`127.0.0.1`, `0.0.0.0`, `::`, a name). */
  host: string;
  /** Actual listening port (known after listen; ephemeral ports in tests). */
  port: number;
}

/** Host names this server answers to. */
export function allowedHostnames(bound: string, extra: string[] = []): Set<string> {
  const names = new Set<string>(extra.map((h) => h.toLowerCase()));
  const b = bound.replace(/^\[|\]$/g, '').toLowerCase();
  if (isLoopback(b)) {
    for (const n of ['localhost', '127.0.0.1', '::1']) names.add(n);
    names.add(b);
    return names;
  }
  names.add(b);
  if (b === '0.0.0.0' || b === '::') {
    // Wildcard bind: every local interface address and the machine's name.
    names.add(hostname().toLowerCase());
    for (const n of ['localhost', '127.0.0.1', '::1']) names.add(n);
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) names.add(a.address.toLowerCase());
  }
  return names;
}

/** Splits `host[:port]` / `[v6]:port`; null when malformed. */
export function splitHost(value: string): { name: string; port: number | null } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value.trim());
  if (!m) return null;
  return { name: m[1]!.replace(/^\[|\]$/g, '').toLowerCase(), port: m[2] ? Number(m[2]) : null };
}

export function hostCheck(endpoint: Endpoint, names: Set<string>) {
  return async function checkHost(ctx: Context, next: Next): Promise<void> {
    const raw = ctx.get('host');
    const parsed = raw ? splitHost(raw) : null;
    if (!parsed || !names.has(parsed.name) || (parsed.port ?? 80) !== endpoint.port) {
      throw new ApiError('FORBIDDEN_HOST', 'the Host header does not name this server');
    }
    await next();
  };
}

/** Refuses requests a browser sends from another site (mounted on state-changing routes only). */
export function crossSiteGuard(endpoint: Endpoint, names: Set<string>) {
  return async function refuseCrossSite(ctx: Context, next: Next): Promise<void> {
    const origin = ctx.get('origin');
    if (origin) {
      let ok = false;
      try {
        const u = new URL(origin);
        const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
        ok = u.protocol === 'http:' && names.has(u.hostname.replace(/^\[|\]$/g, '').toLowerCase()) && port === endpoint.port;
      } catch {
        ok = false;
      }
      if (!ok) throw new ApiError('FORBIDDEN_ORIGIN', 'cross-origin request refused');
    } else {
      const site = ctx.get('sec-fetch-site');
      if (site && site !== 'same-origin' && site !== 'none') throw new ApiError('FORBIDDEN_ORIGIN', 'cross-site request refused');
    }
    await next();
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export function tokensEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** Requires the bearer token when one is configured (mounted on every route not declared public). */
export function tokenGuard(token: string | null) {
  return async function requireToken(ctx: Context, next: Next): Promise<void> {
    if (token !== null) {
      const header = ctx.get('authorization');
      const m = /^Bearer\s+(\S+)$/i.exec(header);
      const query = ctx.method === 'GET' && typeof ctx.query.access_token === 'string' ? ctx.query.access_token : null;
      const given = m?.[1] ?? query;
      if (!given || !tokensEqual(given, token)) throw new ApiError('UNAUTHORIZED', 'a valid bearer token is required');
    }
    await next();
  };
}

/** Response headers that keep browsers from sniffing or framing API answers. */
export function hardeningHeaders() {
  return async function setHardeningHeaders(ctx: Context, next: Next): Promise<void> {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'SAMEORIGIN');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', 'no-store');
    await next();
  };
}
