import {describe, expect, it} from 'vitest';
import {parse} from 'yaml';
import {FIELDS, ROUTES, pathOf} from './client';
import docText from '../../api/openapi.yaml?raw';

const doc = parse(docText);
type Schema = {properties?: Record<string, unknown>; required?: string[]; allOf?: {$ref?: string; properties?: Record<string, unknown>}[]};
const schemas: Record<string, Schema> = doc.components.schemas;
const ref = (x: any): string => String(x?.$ref || '').replace('#/components/schemas/', '');

describe('the API client against api/openapi.yaml', () => {
  it('calls only declared routes, with their schemas', () => {
    for (const [route, want] of Object.entries(ROUTES)) {
      const [method, path] = route.split(' ');
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op, `${route} is not in the document`).toBeTruthy();
      if (want.req) expect(ref(op.requestBody?.content?.['application/json']?.schema), `${route} request`).toBe(want.req);
      if (want.res) {
        const ok = Object.entries(op.responses).find(([code]) => code.startsWith('2'))![1] as any;
        const got = ref(ok.content?.['application/json']?.schema);
        if (want.res.startsWith('List:')) {
          const items = schemas[got]?.properties?.items as any;
          expect(ref(items?.items), `${route} answer`).toBe(want.res.slice(5));
        } else {
          expect(got, `${route} answer`).toBe(want.res);
        }
      }
    }
  });

  it('types each schema with its fields', () => {
    for (const [name, fields] of Object.entries(FIELDS)) {
      const s = schemas[name];
      expect(s, `schema ${name}`).toBeTruthy();
      // An allOf schema has the properties of each of its parts.
      const props = [s, ...(s.allOf || []).map((p) => (p.$ref ? schemas[ref(p)] : p))].flatMap((p) => Object.keys(p.properties || {}));
      for (const f of fields) expect(props, `${name}.${f} is not in the document`).toContain(f);
      for (const f of s.required || []) expect(fields, `${name} lacks the required ${f}`).toContain(f);
    }
  });

  it('fills paths', () => {
    expect(pathOf('PUT /api/v1/datasources/{name}', {name: 'a b/c'})).toBe('/api/v1/datasources/a%20b%2Fc');
    expect(() => pathOf('PUT /api/v1/datasources/{name}')).toThrow('no value for {name}');
  });
});
