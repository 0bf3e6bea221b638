// A client generated from the document (openapi-typescript, as a user's
// would be) types keyword create's intent as an array of the enum's
// values: the typed call compiles, and the shapes the server refuses do
// not. Checked by tsc (npm run check: tsconfig.contract.json).
import type { components } from "../../src/api/schema";

type KeywordCreate = components["schemas"]["keywordRequest"];

export const typed: KeywordCreate = { environment_id: 1, keyword: "espresso grinder", intent: ["commercial", "transactional"] };

// @ts-expect-error intent is an array, not one string
export const oneString: KeywordCreate = { environment_id: 1, keyword: "espresso grinder", intent: "commercial" };

// @ts-expect-error an intent outside the enum
export const unknownIntent: KeywordCreate = { environment_id: 1, keyword: "espresso grinder", intent: ["curious"] };

// A nullable enum in an answer admits null (keywordResponse.post_kind).
export const postKind: components["schemas"]["keywordResponse"]["post_kind"] = null;
