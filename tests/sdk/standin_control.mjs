// standin_control.mjs: the Bedrock control plane's two reads that clients
// make before inference (Claude Code in Bedrock mode lists the system-defined
// inference profiles first), in the shapes of the Bedrock API reference:
// GET /inference-profiles?type=SYSTEM_DEFINED|APPLICATION&maxResults&nextToken
// (ListInferenceProfiles) and GET /foundation-models (ListFoundationModels).
const ACCOUNT = '123456789012';
const CREATED = '2024-08-27T00:00:00.000Z';
const UPDATED = '2025-09-29T00:00:00.000Z';

// The models the stand-in lists: [foundation model id, display name].
const MODELS = [
	['anthropic.claude-sonnet-4-5-20250929-v1:0', 'Claude Sonnet 4.5'],
	['anthropic.claude-haiku-4-5-20251001-v1:0', 'Claude Haiku 4.5'],
	['anthropic.claude-opus-4-1-20250805-v1:0', 'Claude Opus 4.1'],
	['anthropic.claude-3-5-haiku-20241022-v1:0', 'Claude 3.5 Haiku'],
	['amazon.nova-pro-v1:0', 'Nova Pro'],
];
const GEOS = { us: ['us-east-1', 'us-east-2', 'us-west-2'], eu: ['eu-central-1', 'eu-west-1', 'eu-west-3'] };

const fmArn = (region, id) => `arn:aws:bedrock:${region}::foundation-model/${id}`;

function profiles(region) {
	const out = [];
	for (const [geo, regions] of Object.entries(GEOS)) {
		for (const [id, name] of MODELS) {
			const pid = `${geo}.${id}`;
			out.push({
				inferenceProfileName: `${geo.toUpperCase()} ${name}`,
				description: `Routes requests to ${name} in ${regions.join(', ')}.`,
				createdAt: CREATED, updatedAt: UPDATED,
				inferenceProfileArn: `arn:aws:bedrock:${region}:${ACCOUNT}:inference-profile/${pid}`,
				models: regions.map((r) => ({ modelArn: fmArn(r, id) })),
				inferenceProfileId: pid, status: 'ACTIVE', type: 'SYSTEM_DEFINED',
			});
		}
	}
	return out;
}

function page(items, query, member) {
	const max = Math.min(1000, Number(query.get('maxResults') ?? 1000));
	const start = Number(query.get('nextToken') ?? 0);
	const body = { [member]: items.slice(start, start + max) };
	if (start + max < items.length)
		body.nextToken = String(start + max);
	return body;
}

// control(path, query, region): [status, body] for a control-plane read, or
// null when the path is not one.
export function control(path, query, region) {
	if (path === '/inference-profiles') {
		const type = query.get('type') ?? 'SYSTEM_DEFINED';
		if (type !== 'SYSTEM_DEFINED' && type !== 'APPLICATION')
			return [400, { message: `1 validation error detected: Value '${type}' at 'typeEquals' failed to satisfy constraint: Member must satisfy enum value set: [APPLICATION, SYSTEM_DEFINED]` }];
		return [200, page(type === 'SYSTEM_DEFINED' ? profiles(region) : [], query, 'inferenceProfileSummaries')];
	}
	if (path === '/foundation-models') {
		return [200, { modelSummaries: MODELS.map(([id, name]) => ({
			modelArn: fmArn(region, id), modelId: id, modelName: name,
			providerName: id.startsWith('anthropic.') ? 'Anthropic' : 'Amazon',
			inputModalities: ['TEXT', 'IMAGE'], outputModalities: ['TEXT'],
			responseStreamingSupported: true, customizationsSupported: [],
			inferenceTypesSupported: ['INFERENCE_PROFILE'], modelLifecycle: { status: 'ACTIVE' },
		})) }];
	}
	return null;
}
