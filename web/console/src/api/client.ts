// The console's one way to the API: typed from the generated schema.d.ts
// (web/openapi.json), it adds the bearer token, refreshes it before it
// expires, reads the {"data","message"} envelope and turns {"detail"}
// errors into ApiError. A 401 on a signed-in request ends the session here,
// once, for every screen (see session.ts).
import type { components, paths } from "./schema";
import { session } from "../session";

export type Schemas = components["schemas"];
type Method = "get" | "post" | "put" | "delete";

// Paths that have an operation for method M.
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends undefined | never ? never : P;
}[keyof paths];

type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

type Params<O> = O extends { parameters: infer X } ? X : never;
type QueryOf<O> = Params<O> extends { query?: infer Q } ? ([Q] extends [never] ? undefined : Q) : undefined;
type PathOf<O> = Params<O> extends { path: infer P } ? ([P] extends [never] ? undefined : P) : undefined;
type BodyOf<O> = O extends { requestBody: { content: { "application/json": infer B } } }
  ? B
  : O extends { requestBody?: { content: { "application/json": infer B } } }
    ? B
    : undefined;
type JSONOf<R> = R extends { content: { "application/json": infer J } } ? J : never;
// The success body: 200, 201 or 202, whichever the operation declares.
export type Success<O> = O extends { responses: infer R }
  ? R extends { 200: infer S }
    ? JSONOf<S>
    : R extends { 201: infer S }
      ? JSONOf<S>
      : R extends { 202: infer S }
        ? JSONOf<S>
        : never
  : never;

export type Options<O> = {
  query?: QueryOf<O>;
  path?: PathOf<O>;
  body?: BodyOf<O>;
  signal?: AbortSignal;
};

// ApiError is an answer with an error status: its detail is the server's
// {"detail"}. When the detail starts with a field name ("name: must be at
// most 200 characters"), field and fieldMessage hold the two parts, so a
// form can show it beside that field.
export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  readonly field: string | undefined;
  readonly fieldMessage: string | undefined;
  constructor(status: number, detail: string) {
    super(detail);
    this.status = status;
    this.detail = detail;
    const m = /^([a-z][a-z0-9_]*(?:\.[a-z0-9_]+|\[\d+\])*): (.+)$/s.exec(detail);
    this.field = m?.[1];
    this.fieldMessage = m?.[2];
  }
}

// A request made with a session that the server no longer accepts. The
// session is already ended (and the sign-in dialog shown) when it is thrown.
export class SessionEnded extends ApiError {}

export function url(path: string, params?: Record<string, unknown>, query?: Record<string, unknown>): string {
  let p = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(params?.[name] ?? "")));
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
    }
    const s = q.toString();
    if (s) p += "?" + s;
  }
  return p;
}

async function detailOf(res: Response): Promise<string> {
  try {
    const body: unknown = await res.json();
    if (body && typeof body === "object" && "detail" in body && typeof body.detail === "string") return body.detail;
  } catch {
    // not JSON: fall through to the status line
  }
  return `the server answered ${res.status} ${res.statusText}`.trim();
}

// send is the untyped core; the typed helpers below call it.
export async function send(method: string, path: string, o: { body?: unknown; signal?: AbortSignal; token?: boolean } = {}): Promise<unknown> {
  const headers: Record<string, string> = { Accept: "application/json" };
  let token: string | null = null;
  if (o.token !== false) {
    token = await session.token();
    if (token) headers.Authorization = "Bearer " + token;
    // The server ended the session and the sign-in dialog is open: a screen
    // under it asking for more gets the same answer, without a request.
    else if (session.ended?.reason === "ended") throw new SessionEnded(401, session.ended.message);
  }
  let body: string | undefined;
  if (o.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(o.body);
  }
  let res: Response;
  try {
    res = await fetch(path, { method: method.toUpperCase(), headers, body, signal: o.signal, cache: "no-store", credentials: "omit" });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError(0, "the server cannot be reached: check the connection and try again");
  }
  if (!res.ok) {
    const detail = await detailOf(res);
    if (res.status === 401 && token) {
      session.end(token, detail);
      throw new SessionEnded(401, detail);
    }
    throw new ApiError(res.status, detail);
  }
  return res.json();
}

function call<M extends Method>(method: M) {
  return <P extends PathsWith<M>>(path: P, o: Options<Op<P, M>> = {}): Promise<Success<Op<P, M>>> =>
    send(method, url(path, o.path as Record<string, unknown> | undefined, o.query as Record<string, unknown> | undefined), {
      body: o.body,
      signal: o.signal,
    }) as Promise<Success<Op<P, M>>>;
}

export const api = { get: call("get"), post: call("post"), put: call("put"), del: call("delete") };
