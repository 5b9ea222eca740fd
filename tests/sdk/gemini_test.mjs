// gemini_test.mjs BASE_URL KEY MODEL EMBED_MODEL: @google/genai in Gemini API
// mode with its base URL at kilovolt and a kilovolt key as its API key:
// generateContent, generateContentStream, countTokens, embedContent. Prints
// "ok - ..." / "FAIL - ..." per check, "usage {prompt,candidates,thoughts,
// cached,tool}" per metered call (the usageMetadata the SDK reports), and a
// last line "N passed, M failed".
//
// gemini_test.mjs BASE_URL KEY MODEL - --vertex PROJECT LOCATION: the same
// in Vertex AI mode (vertexai: true; issue 38), KEY as the Google access
// token (google-auth-library's OAuth2Client holding it, as googleAuthOptions'
// authClient: sent as Authorization: Bearer KEY); no embedContent (Vertex
// serves embeddings through :predict).
import { GoogleGenAI } from "@google/genai";
import { OAuth2Client } from "google-auth-library";

const [baseUrl, apiKey, model, embedModel, mode, project, location] = process.argv.slice(2);
const vertex = mode === "--vertex";
const auth = new OAuth2Client();
auth.setCredentials({ access_token: apiKey, expiry_date: Date.now() + 3600 * 1000 });
const ai = vertex ? new GoogleGenAI({ vertexai: true, project, location,
	googleAuthOptions: { authClient: auth }, httpOptions: { baseUrl } }) :
	new GoogleGenAI({ apiKey, httpOptions: { baseUrl } });
let passed = 0, failed = 0;
const check = (name, ok) => {
	console.log(`${ok ? "ok" : "FAIL"} - ${name}`);
	ok ? passed++ : failed++;
};
const usage = (u) => console.log("usage " + JSON.stringify({
	prompt: u?.promptTokenCount ?? 0, candidates: u?.candidatesTokenCount ?? 0,
	thoughts: u?.thoughtsTokenCount ?? 0, cached: u?.cachedContentTokenCount ?? 0,
	tool: u?.toolUsePromptTokenCount ?? 0 }));

try {
	const r = await ai.models.generateContent({ model, contents: "Say hello to the gateway.",
		config: { maxOutputTokens: 40, thinkingConfig: { thinkingBudget: 64 },
			systemInstruction: "Be brief." } });
	check("generateContent answers with text", typeof r.text === "string" && r.text.length > 0);
	check("generateContent reports usageMetadata", r.usageMetadata?.promptTokenCount > 0);
	usage(r.usageMetadata);

	const s = await ai.models.generateContentStream({ model,
		contents: [{ role: "user", parts: [{ text: "Stream a few words." }] }],
		config: { maxOutputTokens: 30 } });
	let text = "", last;
	for await (const chunk of s) {
		text += chunk.text ?? "";
		if (chunk.usageMetadata) last = chunk.usageMetadata;
	}
	check("generateContentStream streams text", text.length > 0);
	check("generateContentStream's last chunk has the usage", last?.candidatesTokenCount > 0);
	usage(last);

	const c = await ai.models.countTokens({ model, contents: "How many tokens is this?" });
	check("countTokens answers (free)", c.totalTokens > 0);

	if (!vertex) {
		const e = await ai.models.embedContent({ model: embedModel, contents: "embed this text" });
		check("embedContent returns a vector", e.embeddings?.[0]?.values?.length === 3);
		usage(e.usageMetadata);
	}
} catch (err) {
	check(`no error (${err?.message ?? err})`, false);
}
console.log(`${passed} passed, ${failed} failed`);
