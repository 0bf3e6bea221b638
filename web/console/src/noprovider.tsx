// The empty state of a screen that needs an AI provider credential (chat,
// live sessions, agents, write) when none is usable: it says so before the
// user types, and again if a generation is refused for it. An administrator
// gets the link to the credentials screen; anyone else is told to ask one.
import { useState } from "preact/hooks";
import { api, ApiError } from "./api/client";
import { credentialsPath } from "./router";
import { canEdit, isAdmin, Link, useResource } from "./ui";

// The start of the 409's detail when nothing can generate (msgNoProvider
// in server/engine/engine.go).
const refusal = "no AI provider is configured";

// isNoProvider says whether e is the server refusing a generation because
// no AI provider credential is configured.
export function isNoProvider(e: unknown): boolean {
  return e instanceof ApiError && e.status === 409 && e.detail.startsWith(refusal);
}

// useNoProvider says whether env has no AI credential its editors may use
// (GET /api/agents/credentials: the environment's own and the global ones,
// the same list the server chooses from). A viewer, who cannot generate,
// is not asked. saw(e) is true when e is the server's refusal for it (the
// credential went away since), and shows the empty state from then on.
export function useNoProvider(env: number) {
  const editor = canEdit();
  const list = useResource(
    (signal) => (editor ? api.get("/api/agents/credentials", { query: { environment_id: env, per_page: 1 }, signal }).then((r) => r.data.total) : Promise.resolve(null)),
    [env, editor],
  );
  const [refused, setRefused] = useState(false);
  function saw(e: unknown): boolean {
    if (!isNoProvider(e)) return false;
    setRefused(true);
    return true;
  }
  return { missing: refused || list.data === 0, saw };
}

// NoProvider is the message: what needs a credential (needs: "Chat",
// "An agent", …) and what to do about it.
export function NoProvider({ needs }: { needs: string }) {
  return (
    <p class="notice" role="status">
      No AI provider credential is configured yet: {needs} needs one.{" "}
      {isAdmin() ? (
        <>
          <Link href={credentialsPath}>Add a credential</Link> (an OpenAI, Anthropic or OpenAI-compatible key).
        </>
      ) : (
        "Ask an administrator to add one."
      )}
    </p>
  );
}
