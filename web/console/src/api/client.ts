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

export type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

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
  // fields: the request's fields a 422 names when it is about several.
  readonly fields: string[];
  constructor(status: number, detail: string, fields: string[] = []) {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.fields = fields;
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

// fieldsOf is what an error body's "fields" names (strings only).
function fieldsOf(body: unknown): string[] {
  if (!body || typeof body !== "object" || !("fields" in body) || !Array.isArray(body.fields)) return [];
  return body.fields.filter((f): f is string => typeof f === "string");
}

async function errorOf(res: Response): Promise<{ detail: string; fields: string[] }> {
  try {
    const body: unknown = await res.json();
    if (body && typeof body === "object" && "detail" in body && typeof body.detail === "string") return { detail: body.detail, fields: fieldsOf(body) };
  } catch {
    // not JSON: fall through to the status line
  }
  return { detail: `the server answered ${res.status} ${res.statusText}`.trim(), fields: [] };
}

// failure is the error of an answer with an error status; a 401 to a
// signed-in request ends the session (once, for every screen).
function failure(status: number, detail: string, token: string | null, fields: string[] = []): ApiError {
  if (status === 401 && token) {
    session.end(token, detail);
    return new SessionEnded(401, detail);
  }
  return new ApiError(status, detail, fields);
}

const unreachable = "the server cannot be reached: check the connection and try again";

// authorized is the Authorization header's token, refreshed when due; with
// a session the server ended (the sign-in dialog open), a screen under it
// asking for more gets the same answer, without a request.
async function authorized(): Promise<string | null> {
  const token = await session.token();
  if (!token && session.ended?.reason === "ended") throw new SessionEnded(401, session.ended.message);
  return token;
}

// request is the untyped core: the answer when its status is a success.
export async function request(method: string, path: string, o: { body?: unknown; signal?: AbortSignal; token?: boolean; accept?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { Accept: o.accept ?? "application/json" };
  const token = o.token === false ? null : await authorized();
  if (token) headers.Authorization = "Bearer " + token;
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
    throw new ApiError(0, unreachable);
  }
  if (!res.ok) {
    const e = await errorOf(res);
    throw failure(res.status, e.detail, token, e.fields);
  }
  return res;
}

export async function send(method: string, path: string, o: { body?: unknown; signal?: AbortSignal; token?: boolean } = {}): Promise<unknown> {
  return (await request(method, path, o)).json();
}

function call<M extends Method>(method: M) {
  return <P extends PathsWith<M>>(path: P, o: Options<Op<P, M>> = {}): Promise<Success<Op<P, M>>> =>
    send(method, url(path, o.path as Record<string, unknown> | undefined, o.query as Record<string, unknown> | undefined), {
      body: o.body,
      signal: o.signal,
    }) as Promise<Success<Op<P, M>>>;
}

export const api = { get: call("get"), post: call("post"), put: call("put"), del: call("delete") };

// upload posts a multipart form with XMLHttpRequest, the one browser API
// that reports upload progress (fetch does not); the token goes in the
// Authorization header as with every request. onProgress gets the share
// sent, from 0 to 1.
export async function upload<P extends PathsWith<"post">>(
  path: P,
  form: FormData,
  onProgress: (sent: number) => void,
  signal?: AbortSignal,
): Promise<Success<Op<P, "post">>> {
  const token = await authorized();
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open("POST", path);
    x.setRequestHeader("Accept", "application/json");
    if (token) x.setRequestHeader("Authorization", "Bearer " + token);
    x.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
    };
    x.onerror = () => reject(new ApiError(0, unreachable));
    x.onabort = () => reject(new DOMException("aborted", "AbortError"));
    x.onload = () => {
      let body: unknown = null;
      try {
        body = JSON.parse(x.responseText);
      } catch {
        // not JSON: the status line says it
      }
      if (x.status >= 200 && x.status < 300) {
        onProgress(1);
        resolve(body as Success<Op<P, "post">>);
        return;
      }
      const detail =
        body && typeof body === "object" && "detail" in body && typeof body.detail === "string"
          ? body.detail
          : `the server answered ${x.status} ${x.statusText}`.trim();
      reject(failure(x.status, detail, token));
    };
    signal?.addEventListener("abort", () => x.abort(), { once: true });
    x.send(form);
  });
}

// download fetches a file with the Authorization header and hands it to
// the browser as a download through a blob: address, so the token never
// goes into a URL (a link to the API could not carry the header).
export async function download(path: string, filename: string, accept = "*/*"): Promise<void> {
  const res = await request("get", path, { accept });
  const href = URL.createObjectURL(await res.blob());
  const a = document.createElement("a");
  a.href = href;
  a.download = filename;
  a.rel = "noopener";
  document.body.append(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(href), 10_000);
}
