// Checks an HTTP response against the service's own OpenAPI document: the status code
// is documented for the operation, the content type is one documented for that status,
// documented headers that are present match their schemas, and the body matches the
// schema. The API tests run every response they receive through it.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../src/http/openapi.ts';

type Schema = Record<string, unknown>;
interface MediaType {
  schema?: Schema;
}
interface ResponseObject {
  content?: Record<string, MediaType>;
  headers?: Record<string, { schema?: Schema; required?: boolean }>;
}
interface Operation {
  responses: Record<string, ResponseObject>;
}

const METHODS = ['get', 'post', 'put', 'delete', 'patch', 'head', 'options'] as const;
const DOCUMENT_ID = 'https://hwr.test/openapi.json';

// ajv-formats is CommonJS with its function on `default`.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv2020,
) => Ajv2020;

export class OpenApiValidator {
  private readonly document: ReturnType<typeof openApiDocument>;
  private readonly ajv: Ajv2020;
  private readonly routes: Array<{ template: string; pattern: RegExp }>;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(baseUrl: string) {
    this.document = openApiDocument(baseUrl);
    // strict: false, because the OpenAPI document is added whole and carries keywords
    // (paths, info, parameters…) that are not JSON Schema.
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('binary', true);
    this.ajv.addSchema({ ...this.document, $id: DOCUMENT_ID });
    this.routes = Object.keys(this.document.paths).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }));
  }

  /** Throws an AssertionError-like Error describing every way the response breaks the document. */
  check(method: string, url: string, response: { status: number; headers: Headers }, body: Buffer): void {
    const path = new URL(url).pathname;
    const route = this.routes.find((candidate) => candidate.pattern.test(path));
    if (!route) throw new Error(`OpenAPI: no documented path matches ${path}`);
    const lower = method.toLowerCase() as (typeof METHODS)[number];
    const pathItem = (this.document.paths as unknown as Record<string, Record<string, Operation>>)[route.template];
    const operation = pathItem[lower];
    if (!operation) throw new Error(`OpenAPI: ${method} ${route.template} is not documented`);
    const statusKey = String(response.status);
    const documented = operation.responses[statusKey] ?? operation.responses[`${statusKey[0]}XX`] ?? operation.responses.default;
    if (!documented) {
      throw new Error(
        `OpenAPI: ${method} ${route.template} answered ${response.status}, which is not documented (${Object.keys(operation.responses).join(', ')})`,
      );
    }
    const where = `${method} ${route.template} ${response.status}`;
    for (const [name, header] of Object.entries(documented.headers ?? {})) {
      const value = response.headers.get(name);
      if (value === null && header.required) throw new Error(`OpenAPI: ${where} lacks the required header ${name}`);
      if (value === null || !header.schema) continue;
      const typed = header.schema.type === 'integer' ? Number(value) : value;
      this.validate(
        `${where} header ${name}`,
        typed,
        `#/paths/${pointer(route.template)}/${lower}/responses/${statusKey}/headers/${pointer(name)}/schema`,
      );
    }
    const content = documented.content;
    if (!content) {
      if (body.length > 0) throw new Error(`OpenAPI: ${where} documents no body, got ${body.length} bytes`);
      return;
    }
    const contentType = (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    const media = content[contentType];
    if (!media)
      throw new Error(`OpenAPI: ${where} has content type ${JSON.stringify(contentType)}; documented: ${Object.keys(content).join(', ')}`);
    if (!media.schema || !/(^|\+|\/)json$/.test(contentType)) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new Error(`OpenAPI: ${where} body is not JSON: ${body.toString('utf8').slice(0, 200)}`);
    }
    this.validate(
      where,
      parsed,
      `#/paths/${pointer(route.template)}/${lower}/responses/${statusKey}/content/${pointer(contentType)}/schema`,
    );
  }

  /** Validates a value against a named component schema (e.g. the callback body). */
  checkComponent(name: string, value: unknown): void {
    this.validate(`components.schemas.${name}`, value, `#/components/schemas/${pointer(name)}`);
  }

  private validate(where: string, value: unknown, ref: string): void {
    let validate = this.compiled.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}${ref}` });
      this.compiled.set(ref, validate);
    }
    if (!validate(value)) {
      const errors = (validate.errors ?? []).map(
        (error) => `${error.instancePath || '(body)'} ${error.message}${error.params ? ` ${JSON.stringify(error.params)}` : ''}`,
      );
      throw new Error(
        `OpenAPI: ${where} does not match its schema:\n  ${errors.join('\n  ')}\n  value: ${JSON.stringify(value).slice(0, 2000)}`,
      );
    }
  }
}

/** One JSON-pointer segment, URI-encoded for use in a `$ref` fragment. */
function pointer(segment: string): string {
  return encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1'));
}
