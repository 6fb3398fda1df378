// Request gatekeeping (docs/threat-model.md), as middleware factories:
// - hostCheck (global): the Host header must name this server (DNS rebinding defence);
// - crossSiteGuard (on each state-changing route, declared in registry.ts): a request coming
//   from a browser must carry this server's own Origin; a browser's cross-site marker without
//   an Origin is refused too. Clients that are not browsers send neither header and pass;
// - tokenGuard (on each route that is not declared public): when a token is configured,
//   `Authorization: Bearer <token>` (constant-time comparison). GET requests may carry
//   `?access_token=` instead, because EventSource and links opened in a new tab cannot set headers.
//   A browser signs in once (POST /api/auth/session with the token) and then carries a session
//   cookie: HttpOnly (page scripts cannot read it), SameSite=Strict (another site's page never
//   makes the browser send it), named per port (two servers on one host keep their own), and
//   holding a value derived from the token rather than the token itself. State-changing routes
//   keep the cross-site guard on top, so the cookie adds no cross-site reach.
// The route guards sit on the route declarations, never behind a comparison of request paths:
// whatever path text the router accepts for a route, the route's guards run.

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
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

/** The browser session cookie's name for the server listening on `port`. */
export function sessionCookieName(port: number): string {
  return `skystack_session_${port}`;
}

/** The session cookie's value: derived from the token, so the token is not what the browser stores. */
export function sessionValue(token: string): string {
  return createHmac('sha256', token).update('skystack browser session v1').digest('base64url');
}

/** Cookie attributes of the session cookie (`maxAge` 0 clears it). */
export function sessionCookieOptions(maxAgeMs?: number): { httpOnly: true; sameSite: 'strict'; path: '/'; overwrite: true; maxAge?: number } {
  return { httpOnly: true, sameSite: 'strict', path: '/', overwrite: true, ...(maxAgeMs !== undefined ? { maxAge: maxAgeMs } : {}) };
}

/**
 * Requires the token when one is configured (mounted on every route not declared public):
 * the bearer header, `?access_token=` on GET, or the browser session cookie. `endpoint.port` is
 * read per request (an ephemeral port is known only after listen).
 */
export function tokenGuard(token: string | null, endpoint: Endpoint) {
  const session = token === null ? null : sessionValue(token);
  return async function requireToken(ctx: Context, next: Next): Promise<void> {
    if (token !== null && session !== null) {
      const header = ctx.get('authorization');
      const m = /^Bearer\s+(\S+)$/i.exec(header);
      const query = ctx.method === 'GET' && typeof ctx.query.access_token === 'string' ? ctx.query.access_token : null;
      const given = m?.[1] ?? query;
      const cookie = given ? undefined : ctx.cookies.get(sessionCookieName(endpoint.port));
      const ok = given ? tokensEqual(given, token) : cookie ? tokensEqual(cookie, session) : false;
      if (!ok) throw new ApiError('UNAUTHORIZED', 'a valid bearer token is required');
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
